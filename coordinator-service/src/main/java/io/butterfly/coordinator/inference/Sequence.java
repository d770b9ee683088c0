package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.cluster.TaskRequest;
import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import io.butterfly.coordinator.inference.scheduler.SequenceProgress;
import io.butterfly.coordinator.model.ServedModel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One request in the engine: what it asked, its progress through the stages, what it generated and how long each
 * part took. Touched only under the engine's lock.
 */
final class Sequence implements RequestHandle {

    final SequenceProgress progress;
    final ServedModel model;
    final long[] prompt;
    final int maxTokens;
    final Sampler sampler;
    final boolean ignoreEos;
    /** What was asked, as the task's record keeps it (another replica resumes the task from it). */
    final TaskRequest request;
    /** Follows the text for a listener or stop strings; null when nobody needs it. */
    final IncrementalText text;
    /** Told each token; replaced when a client that lost its stream comes back for the rest (null: nobody). */
    TokenListener listener;
    final long arrivedNanos;
    private final CompletableFuture<GenerationResult> result = new CompletableFuture<>();
    private final Engine engine;

    final List<Long> generated = new ArrayList<>();
    final List<Double> logprobs = new ArrayList<>();
    final List<List<TokenLogprob>> topLogprobs = new ArrayList<>();
    /** The text each generated token settled, as its listener was told (when {@link #text} is followed). */
    final List<String> pieces = new ArrayList<>();
    final Map<String, Double> stageMs = new LinkedHashMap<>();
    long firstTokenNanos;
    long lastTokenNanos;
    long pipelineNanos;
    long transportNanos;
    long samplingNanos;
    /** Why it is to end at its next step (a client gone); null while it may go on. */
    String cancelled;
    /** Why it is to leave at its next step without ending, resumable elsewhere (its streaming client went away). */
    String detached;
    /** The replica the task moved to (a client resumed it there): it leaves here at its next step, unrecorded. */
    String movedTo;
    /** Since when it has waited to generate again (paused, then replaying); 0 while it generates. */
    long pausedSinceNanos;
    /** What paused it. */
    RuntimeException pauseCause;
    /**
     * The stages know its KV caches by this id: the task id, kept across a pause on this replica (kept stages answer
     * its replay from their caches); a fresh one when a replica takes the task over (its former owner may still hold
     * and free caches under the old one).
     */
    private String stageId;
    /** Its trace, from the moment the engine takes it. */
    RequestTracing.Trace trace = RequestTracing.Trace.NONE;

    Sequence(String id, ServedModel model, long[] prompt, int maxTokens, Sampler sampler, boolean ignoreEos,
             TaskRequest request, IncrementalText text, TokenListener listener, long arrivedNanos, Engine engine) {
        this.progress = new SequenceProgress(id, prompt.length, maxTokens);
        this.model = model;
        this.prompt = prompt;
        this.maxTokens = maxTokens;
        this.sampler = sampler;
        this.ignoreEos = ignoreEos;
        this.request = request;
        this.text = text;
        this.listener = listener;
        this.arrivedNanos = arrivedNanos;
        this.engine = engine;
        this.stageId = id;
    }

    @Override
    public String taskId() {
        return progress.id();
    }

    @Override
    public ServedModel model() {
        return model;
    }

    @Override
    public List<Long> promptTokenIds() {
        return Arrays.stream(prompt).boxed().toList();
    }

    @Override
    public CompletableFuture<GenerationResult> result() {
        return result;
    }

    @Override
    public void cancel(String reason) {
        engine.cancel(this, reason);
    }

    @Override
    public void detach(String reason) {
        engine.detach(this, reason);
    }

    /** The id its KV caches have on the stages in its current attempt. */
    String stageId() {
        return stageId;
    }

    /** New caches for a task taken over: a new id, unlike any this or another replica used for the task. */
    void newAttempt() {
        byte[] suffix = new byte[6];
        ThreadLocalRandom.current().nextBytes(suffix);
        stageId = taskId() + "~" + HexFormat.of().formatHex(suffix);
    }

    /** The tokens fed from known ones: the prompt, then those generated. */
    int historyLength() {
        return prompt.length + generated.size();
    }

    /**
     * The tokens a step of {@code n} new positions from {@code position} feeds: its history's (the prompt, then the
     * generated tokens; a decode feeds the last one chosen).
     */
    void appendInput(long[] into, int at, int position, int n) {
        for (int i = 0; i < n; i++) {
            int p = position + i;
            into[at + i] = p < prompt.length ? prompt[p] : generated.get(p - prompt.length);
        }
    }

    /** Generated token {@code index} as its listener was told it. */
    GeneratedToken token(int index) {
        return new GeneratedToken(taskId(), index, generated.get(index), pieces.isEmpty() ? "" : pieces.get(index),
                logprobs.get(index), topLogprobs.get(index));
    }

    /** Adds one step's share: the micro-batch's time in each stage, between them, and in all. */
    void addStep(List<StepResult.StageTiming> timings, long pipeline, long transport) {
        for (StepResult.StageTiming t : timings) {
            stageMs.merge(t.nodeId(), t.computeNanos() / 1e6, Double::sum);
        }
        pipelineNanos += pipeline;
        transportNanos += transport;
    }

    GenerationResult finish(String finishReason, long endNanos) {
        double ttftMs = (firstTokenNanos - arrivedNanos) / 1e6;
        double decodeSeconds = (lastTokenNanos - firstTokenNanos) / 1e9;
        double decodeTps = generated.size() > 1 && decodeSeconds > 0 ? (generated.size() - 1) / decodeSeconds : 0;
        String whole = text != null && text.stopped() ? text.textBeforeStop()
                : model.tokenizer().decode(generated.stream().mapToLong(Long::longValue).toArray());
        GenerationResult r = new GenerationResult(taskId(), model.manifest().modelId(),
                promptTokenIds(), List.copyOf(generated), whole, finishReason,
                List.copyOf(logprobs), List.copyOf(topLogprobs), ttftMs, decodeTps, (endNanos - arrivedNanos) / 1e6,
                Map.copyOf(stageMs), transportNanos / 1e6, pipelineNanos / 1e6, samplingNanos / 1e6);
        result.complete(r);
        return r;
    }

    void fail(RuntimeException e) {
        result.completeExceptionally(e);
    }
}
