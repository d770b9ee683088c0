package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.sampling.Sampler;
import io.butterfly.coordinator.inference.scheduler.SequenceProgress;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import io.butterfly.coordinator.model.ServedModel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

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
    /** Follows the text for a listener or stop strings; null when nobody needs it. */
    final IncrementalText text;
    final TokenListener listener;
    final long arrivedNanos;
    private final CompletableFuture<GenerationResult> result = new CompletableFuture<>();
    private final Engine engine;

    final List<Long> generated = new ArrayList<>();
    final List<Double> logprobs = new ArrayList<>();
    final List<List<TokenLogprob>> topLogprobs = new ArrayList<>();
    final Map<String, Double> stageMs = new LinkedHashMap<>();
    long firstTokenNanos;
    long lastTokenNanos;
    long pipelineNanos;
    long transportNanos;
    long samplingNanos;
    /** Why it is to end at its next step (a client gone); null while it may go on. */
    String cancelled;
    /** Its trace, from the moment the engine takes it. */
    RequestTracing.Trace trace = RequestTracing.Trace.NONE;

    Sequence(String id, ServedModel model, long[] prompt, int maxTokens, Sampler sampler, boolean ignoreEos,
             IncrementalText text, TokenListener listener, long arrivedNanos, Engine engine) {
        this.progress = new SequenceProgress(id, prompt.length, maxTokens);
        this.model = model;
        this.prompt = prompt;
        this.maxTokens = maxTokens;
        this.sampler = sampler;
        this.ignoreEos = ignoreEos;
        this.text = text;
        this.listener = listener;
        this.arrivedNanos = arrivedNanos;
        this.engine = engine;
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
        return java.util.Arrays.stream(prompt).boxed().toList();
    }

    @Override
    public CompletableFuture<GenerationResult> result() {
        return result;
    }

    @Override
    public void cancel(String reason) {
        engine.cancel(this, reason);
    }

    /** The tokens a step of {@code n} new positions feeds: the prompt's next ones, or the last token chosen. */
    void appendInput(long[] into, int at, int n) {
        if (progress.prefilling()) {
            System.arraycopy(prompt, progress.computed(), into, at, n);
        } else {
            into[at] = generated.get(generated.size() - 1);
        }
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
