package io.butterfly.coordinator.inference.engine;

import java.util.List;

/** The last stage's answer to one step, as it arrived: nothing is decoded before it is asked for. */
public interface StepResult {

    /**
     * The logits at each sequence's last position, {@code [sequences, vocab]} row after row (float32), decoded and
     * checked against their hash; malformed ones are the stage's failure.
     */
    float[] logits();

    List<Long> logitsShape();

    /** What each stage spent on the step. */
    List<StageTiming> timings();

    /** @param wallNanos the step's time in the stage, from receipt to hand-off; the rest of a step is transport */
    record StageTiming(String nodeId, long computeNanos, long wallNanos) {
    }
}
