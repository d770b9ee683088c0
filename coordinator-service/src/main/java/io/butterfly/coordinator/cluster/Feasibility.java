package io.butterfly.coordinator.cluster;

/**
 * The feasibility check's verdict as recorded in the log (docs/initialization-and-bootstrap.md §5.1, §7.6).
 *
 * @param planner        planner that was (or would have been) used
 * @param feasible       whether a plan within the workers' memory exists
 * @param requiredBytes  memory the model needs (weights, KV cache, activation headroom)
 * @param availableBytes memory the workers offer
 * @param reason         the verdict in words, naming need and capacity
 */
public record Feasibility(String planner, boolean feasible, long requiredBytes, long availableBytes, String reason,
                          long atMs) {
}
