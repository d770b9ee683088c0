package io.butterfly.coordinator.inference;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRequest;
import io.butterfly.coordinator.inference.engine.Sequence;
import io.butterfly.coordinator.inference.engine.SequenceOutputs;
import io.butterfly.coordinator.inference.engine.StepResult;
import io.butterfly.coordinator.inference.sampling.TokenChoice;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import io.butterfly.coordinator.model.ServedModel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One request as the output processor follows it, and its caller's handle on it: the text its tokens settle (and the
 * stop strings it watches for), the listener told each token, the answer, its task's events in the journal, its trace
 * and its timings. The engine's {@link Sequence} holds the tokens themselves; this holds what is made of them. Touched
 * on the caller's thread until the request is submitted, then on the engine's thread.
 */
final class RequestOutput implements RequestHandle, SequenceOutputs {

    private final OutputProcessor processor;
    private final Sequence sequence;
    private final ServedModel model;
    private final long[] prompt;
    /** What was asked, as the task's record keeps it (another replica resumes the task from it). */
    private final TaskRequest request;
    /** Follows the text for a listener or stop strings; null when nobody needs it. */
    private final IncrementalText text;
    /** Told each token; replaced when a client that lost its stream comes back for the rest (null: nobody). */
    private TokenListener listener;
    private final long arrivedNanos;
    private final CompletableFuture<GenerationResult> result = new CompletableFuture<>();
    /** Whether its start is recorded when the engine takes it (not when it was committed before, or is resumed). */
    private boolean recordsStart = true;
    /** A resumed request's client has the tokens up to this one; -2 when it resumed nothing. */
    private int resumedAfter = -2;
    private RequestTracing.Trace trace = RequestTracing.Trace.NONE;

    private final List<Double> logprobs = new ArrayList<>();
    private final List<List<TokenLogprob>> topLogprobs = new ArrayList<>();
    /** The text each generated token settled, as its listener was told (when {@link #text} is followed). */
    private final List<String> pieces = new ArrayList<>();
    private final Map<String, Double> stageMs = new LinkedHashMap<>();
    private long firstTokenNanos;
    private long lastTokenNanos;
    private long pipelineNanos;
    private long transportNanos;
    private long samplingNanos;

    /** @param tenant the API key's id the request came with ({@link Sequence#ANONYMOUS}: none), whose share it takes */
    RequestOutput(OutputProcessor processor, String taskId, String tenant, ServedModel model, long[] prompt,
                  int maxTokens, Sequence.Decoding decoding, TaskRequest request, IncrementalText text,
                  TokenListener listener, long arrivedNanos) {
        this.processor = processor;
        this.model = model;
        this.prompt = prompt;
        this.request = request;
        this.text = text;
        this.listener = listener;
        this.arrivedNanos = arrivedNanos;
        this.sequence = new Sequence(taskId, tenant, prompt, maxTokens, decoding, this);
        processor.transcripts().keep(taskId, sequence.transcript());
    }

    Sequence sequence() {
        return sequence;
    }

    TaskRequest request() {
        return request;
    }

    int promptLength() {
        return prompt.length;
    }

    /** Its start was committed before it runs (an idempotent request): the engine records no start. */
    void startRecorded() {
        recordsStart = false;
    }

    /**
     * It carries on a task from the recorded tokens it was given: its client has those up to {@code afterIndex}, and is
     * told the rest when the engine takes it, then each new one.
     */
    void resumeAfter(int afterIndex) {
        recordsStart = false;
        resumedAfter = afterIndex;
        listener = TokenListener.after(afterIndex, listener); // what it regenerates up to there is not news
        firstTokenNanos = lastTokenNanos = System.nanoTime();
    }

    // The handle.

    @Override
    public String taskId() {
        return sequence.id();
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
        processor.engine().cancel(sequence, reason);
    }

    @Override
    public void detach(String reason) {
        processor.engine().detach(sequence, reason);
    }

    // Tokens a record holds, before it runs.

    /**
     * Adds a token its task's record holds, as its owner told it; answers why it ends the generation (null: it goes
     * on).
     */
    String addRecorded(long tokenId, Double logprob, List<TokenLogprob> top) {
        logprobs.add(logprob);
        topLogprobs.add(top);
        return sequence.append(tokenId, this::settle);
    }

    /** Tells its listener its tokens after {@code afterIndex}. */
    void tellAfter(int afterIndex) {
        if (listener != null) {
            for (int i = Math.max(0, afterIndex + 1); i < sequence.generatedCount(); i++) {
                listener.onToken(token(i));
            }
        }
    }

    /** A client came back for it (on the engine's thread): it is told the tokens after {@code afterIndex} at once. */
    RequestHandle attach(int afterIndex, TokenListener client) {
        listener = TokenListener.after(afterIndex, client);
        tellAfter(afterIndex);
        return this;
    }

    /** Generated token {@code index} as its listener was told it. */
    private GeneratedToken token(int index) {
        return new GeneratedToken(taskId(), index, sequence.tokenId(index), pieces.isEmpty() ? "" : pieces.get(index),
                logprobs.get(index), topLogprobs.get(index));
    }

    /** The text the token just appended settles; whether a stop string ended the text with it. */
    private boolean settle(boolean last) {
        IncrementalText.Piece piece = text == null ? null
                : text.add(sequence.tokenId(sequence.generatedCount() - 1), last);
        if (piece != null) {
            pieces.add(piece.text());
        }
        return piece != null && piece.stopped();
    }

    /** The generation's text: up to the stop string that ended it, or all its tokens decoded. */
    String text(List<Long> tokens) {
        return text != null && text.stopped() ? text.textBeforeStop()
                : model.tokenizer().decode(tokens.stream().mapToLong(Long::longValue).toArray());
    }

    /** Each token's log-probability; null where a record lost it (answered as null). */
    List<Double> logprobs() {
        return java.util.Collections.unmodifiableList(new ArrayList<>(logprobs));
    }

    List<List<TokenLogprob>> topLogprobs() {
        return topLogprobs;
    }

    // What the engine tells.

    @Override
    public void submitted() {
        trace = processor.tracing().start(taskId());
    }

    @Override
    public void accepted() {
        if (recordsStart) {
            processor.journal().started(taskId(), request, processor.nowMillis());
        }
        if (resumedAfter > -2) {
            tellAfter(resumedAfter);
        }
    }

    @Override
    public Map<String, String> stepStarted(long batchId, int position, int tokens, int batchSequences) {
        return trace.stepStarted(batchId, position, tokens, batchSequences);
    }

    @Override
    public void stepEnded(long batchId) {
        trace.stepEnded(batchId);
    }

    @Override
    public void stepTimed(List<StepResult.StageTiming> timings, long pipeline, long transport) {
        for (StepResult.StageTiming t : timings) {
            stageMs.merge(t.nodeId(), t.computeNanos() / 1e6, Double::sum);
        }
        pipelineNanos += pipeline;
        transportNanos += transport;
    }

    @Override
    public void stepFailed(long batchId, Throwable failure) {
        trace.stepFailed(batchId, failure);
    }

    @Override
    public void resumed() {
        processor.journal().resumed(taskId(), processor.nowMillis());
    }

    @Override
    public boolean token(int index, TokenChoice choice, boolean last, long sampling) {
        long now = System.nanoTime();
        samplingNanos += sampling;
        if (index == 0) {
            firstTokenNanos = now;
            processor.metrics().firstToken((now - arrivedNanos) / 1e9);
        } else {
            processor.metrics().interTokenLatency((now - lastTokenNanos) / 1e9);
        }
        lastTokenNanos = now;
        processor.counted();
        logprobs.add(choice.logprob());
        topLogprobs.add(choice.topLogprobs());
        processor.journal().progressed(taskId(), index, new TaskEvent.Token(choice.tokenId(), choice.logprob(),
                choice.topLogprobs().stream().map(t -> new TaskEvent.Alternative(t.tokenId(), t.logprob())).toList()),
                processor.nowMillis());
        boolean stopped = settle(last);
        if (listener != null) {
            listener.onToken(token(index));
        }
        return stopped;
    }

    @Override
    public void paused(RuntimeException cause) {
        processor.journal().paused(taskId(), cause.getMessage(), processor.nowMillis());
    }

    /** Recorded, then answered: a client that reads the task after its answer finds it ended. */
    @Override
    public void finished(String finishReason) {
        long now = System.nanoTime();
        trace.ended(finishReason, null, sequence.generatedCount());
        processor.journal().finished(taskId(), sequence.generated(), finishReason, processor.nowMillis());
        answer(finishReason, now);
        ended(now, finishReason);
    }

    /** Completes the answer: the generation, its text and timings. */
    void answer(String finishReason, long now) {
        List<Long> tokens = sequence.generated();
        double ttftMs = (firstTokenNanos - arrivedNanos) / 1e6;
        double decodeSeconds = (lastTokenNanos - firstTokenNanos) / 1e9;
        double decodeTps = tokens.size() > 1 && decodeSeconds > 0 ? (tokens.size() - 1) / decodeSeconds : 0;
        result.complete(new GenerationResult(taskId(), model.manifest().modelId(), promptTokenIds(), tokens,
                text(tokens), finishReason, logprobs(), List.copyOf(topLogprobs), ttftMs, decodeTps,
                (now - arrivedNanos) / 1e6, Map.copyOf(stageMs), transportNanos / 1e6, pipelineNanos / 1e6,
                samplingNanos / 1e6));
    }

    @Override
    public void failed(RuntimeException cause) {
        long now = System.nanoTime();
        trace.ended(null, cause, sequence.generatedCount());
        processor.journal().failed(taskId(), cause.getMessage() == null ? cause.toString() : cause.getMessage(),
                processor.nowMillis());
        result.completeExceptionally(cause);
        ended(now, "error");
    }

    @Override
    public void left(ButterflyException answer, String pausedReason) {
        if (pausedReason != null) {
            processor.journal().paused(taskId(), pausedReason, processor.nowMillis());
        }
        trace.ended(null, answer, sequence.generatedCount());
        result.completeExceptionally(answer);
        ended(System.nanoTime(), "left");
    }

    @Override
    public void refused(RuntimeException why) {
        trace.ended(null, why, sequence.generatedCount());
        result.completeExceptionally(why);
    }

    private void ended(long nowNanos, String how) {
        processor.metrics().requestEnded((nowNanos - arrivedNanos) / 1e9, prompt.length, sequence.generatedCount(),
                how);
    }
}
