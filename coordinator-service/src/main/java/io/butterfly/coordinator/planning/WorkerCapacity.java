package io.butterfly.coordinator.planning;

/**
 * What the planner knows about one worker.
 *
 * @param nodeId      worker id (unique within a plan)
 * @param gflops      measured throughput; the weight of the worker's share of layers
 * @param memoryBytes memory available for weights; 0 means unknown (no memory cap)
 */
public record WorkerCapacity(String nodeId, double gflops, long memoryBytes) {

    public WorkerCapacity {
        if (nodeId == null || nodeId.isBlank()) {
            throw new IllegalArgumentException("nodeId must not be blank");
        }
        // A non-positive or non-finite weight would make the proportional split meaningless.
        if (!(gflops > 0) || Double.isInfinite(gflops)) {
            throw new IllegalArgumentException("gflops of " + nodeId + " must be positive and finite, got " + gflops);
        }
        if (memoryBytes < 0) {
            throw new IllegalArgumentException("memoryBytes of " + nodeId + " must not be negative, got " + memoryBytes);
        }
    }
}
