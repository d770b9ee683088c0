package io.butterfly.worker.pipeline;

/**
 * What a step spent on one stage.
 *
 * @param computeNanos the engine's forward pass
 * @param wallNanos    from the step reaching the stage to its hand-off (checks, compute, encoding): the
 *                     coordinator's step time minus every stage's wall time is the transport cost
 */
public record StageTiming(String nodeId, long computeNanos, long wallNanos) {
}
