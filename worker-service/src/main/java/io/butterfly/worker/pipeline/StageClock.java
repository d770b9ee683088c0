package io.butterfly.worker.pipeline;

/**
 * This stage's timing of a step, running until the step is handed off: the wall time is read then, after the
 * output is encoded, since encoding (hashing the activations) is part of what the step spent here.
 *
 * @param entryNanos   when the step reached this stage ({@link System#nanoTime()})
 * @param computeNanos the engine's forward pass (0 if the step failed before it)
 */
public record StageClock(String nodeId, long entryNanos, long computeNanos) {

    /** The timing as of now. */
    public StageTiming stop() {
        return new StageTiming(nodeId, computeNanos, System.nanoTime() - entryNanos);
    }
}
