package io.butterfly.coordinator.inference.engine;

/**
 * What the engine reports for operators (config publishes it for Prometheus under vLLM's names, where vLLM has
 * one). Called on the engine's thread: implementations must not block.
 */
public interface ServingMetrics {

    /** Reports nothing. */
    ServingMetrics NONE = new ServingMetrics() {
    };

    /** A sequence's first token, {@code seconds} after its request arrived. */
    default void firstToken(double seconds) {
    }

    /** The time between two tokens of one sequence. */
    default void interTokenLatency(double seconds) {
    }

    /** A request ended (finished or failed) {@code seconds} after it arrived. */
    default void requestEnded(double seconds, int promptTokens, int generatedTokens, String finishReason) {
    }

    /** A micro-batch went into the pipeline. */
    default void batchScheduled(int sequences, int tokens) {
    }

    /** One stage's part of a step: compute and its whole time there. */
    default void stageStep(String nodeId, double computeSeconds, double wallSeconds) {
    }

    /** A step's time outside every stage (between processes), and the hops it made. */
    default void transport(double seconds, int hops) {
    }
}
