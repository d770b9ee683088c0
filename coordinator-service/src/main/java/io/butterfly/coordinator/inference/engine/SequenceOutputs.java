package io.butterfly.coordinator.inference.engine;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.coordinator.inference.sampling.TokenChoice;
import java.util.List;
import java.util.Map;

/**
 * What becomes of one sequence, told by the engine core as it happens: the output processor's side (the text and its
 * stop strings, the client's listener and answer, the task journal, the trace, the request's metrics). Called on the
 * engine's thread but for {@link #submitted}: implementations hand work over, they do not block.
 */
public interface SequenceOutputs {

    /** Tells nothing (a sequence that is only scheduled). */
    SequenceOutputs NONE = new SequenceOutputs() {
    };

    /** Its request took a place in the queue; on the submitting thread (a request's span starts in its caller's trace). */
    default void submitted() {
    }

    /** The engine took it: its start is recorded, or a client that resumed it is told what it missed. */
    default void accepted() {
    }

    /**
     * Its part of micro-batch {@code batchId} goes out; answers the propagation fields (W3C {@code traceparent}, ...)
     * the step carries to the stages, empty when it is not traced.
     */
    default Map<String, String> stepStarted(long batchId, int position, int tokens, int batchSequences) {
        return Map.of();
    }

    /** Micro-batch {@code batchId} came back. */
    default void stepEnded(long batchId) {
    }

    /** Its step (of its current attempt) came back: what each stage and the transport between them spent on it. */
    default void stepTimed(List<StepResult.StageTiming> timings, long pipelineNanos, long transportNanos) {
    }

    /** Micro-batch {@code batchId} failed (it pauses, or ends). */
    default void stepFailed(long batchId, Throwable failure) {
    }

    /**
     * It generates again after a pause (told before its token).
     */
    default void resumed() {
    }

    /**
     * Its token {@code index} was chosen ({@code last}: no token follows); answers whether a stop string ended its
     * text with it. Throwing ends the sequence, as failed.
     */
    default boolean token(int index, TokenChoice choice, boolean last, long samplingNanos) {
        return false;
    }

    /** It stopped generating for want of a stage, first since it last generated. */
    default void paused(RuntimeException cause) {
    }

    /** It ended: the generation is complete ({@code finishReason} "stop" or "length"). */
    default void finished(String finishReason) {
    }

    /** It ended, failed. */
    default void failed(RuntimeException cause) {
    }

    /**
     * It left without ending its task, which goes on elsewhere; recorded paused with {@code pausedReason} (null: the
     * replica it moved to records it); its answer here fails with {@code answer}.
     */
    default void left(ButterflyException answer, String pausedReason) {
    }

    /** Refused before the engine took it (the engine stopped, or its task still leaves this replica): nothing is recorded. */
    default void refused(RuntimeException why) {
    }
}
