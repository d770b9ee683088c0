package io.butterfly.coordinator.inference;

import java.util.Map;

/**
 * Traces of requests (config/ implements it with Micrometer Tracing): a span per request, a child span per pipeline
 * step it takes, and the step's trace context handed to the stages, whose spans of the step become its children. So
 * one trace follows a request through every stage. Called on the engine's thread but for {@link #start}:
 * implementations must not block.
 */
public interface RequestTracing {

    /** Traces nothing. */
    RequestTracing NONE = taskId -> Trace.NONE;

    /** Starts a request's span as a child of the caller's current span; called on the caller's thread. */
    Trace start(String taskId);

    /**
     * One request's trace. A sequence is in one micro-batch at a time, except while it replays its history after a
     * pause, when several of its steps are in flight: a step's span is named by its micro-batch.
     */
    interface Trace {

        Trace NONE = new Trace() {
        };

        /**
         * Opens the span of the request's next pipeline step.
         *
         * @return the propagation fields (W3C {@code traceparent}, ...) the step carries to the stages; empty when
         *         the request is not sampled
         */
        default Map<String, String> stepStarted(long batchId, int position, int tokens, int batchSequences) {
            return Map.of();
        }

        /** Closes the span of micro-batch {@code batchId}'s step: it came back with logits. */
        default void stepEnded(long batchId) {
        }

        /** Closes the span of micro-batch {@code batchId}'s step as failed (the request pauses, or ends). */
        default void stepFailed(long batchId, Throwable failure) {
        }

        /**
         * Closes the request's span, and its step spans still open (the steps failed with it): finished with
         * {@code finishReason}, or failed (or left this replica) with {@code failure}.
         */
        default void ended(String finishReason, Throwable failure, int generatedTokens) {
        }
    }
}
