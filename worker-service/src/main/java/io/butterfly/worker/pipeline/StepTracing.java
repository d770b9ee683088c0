package io.butterfly.worker.pipeline;

/**
 * This stage's spans of the steps it runs (config/ implements it with Micrometer Tracing): one per traced sequence
 * of a step, a child of the coordinator's span of that step for the sequence's request, whose context the sequence's
 * slice carries. So each request's trace shows every stage's part of every step, whatever it was batched with.
 */
public interface StepTracing {

    /** Traces nothing. */
    StepTracing NONE = (step, nodeId) -> Spans.NONE;

    /** Starts this stage's spans of {@code step}, as it arrives; nothing for sequences without a trace context. */
    Spans started(Step step, String nodeId);

    /** The spans of one step here, ended when the step leaves this stage. */
    interface Spans {

        Spans NONE = failure -> {
        };

        /** Ends them: the step was handed on ({@code failure} null) or failed here. */
        void end(Throwable failure);
    }
}
