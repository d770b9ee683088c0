package io.butterfly.coordinator.planning;

import java.util.List;

/** Splits a model's transformer layers over workers (docs/initialization-and-bootstrap.md §4.2, §5.2). */
public interface PartitionPlanner {

    /**
     * Plans the pipeline.
     *
     * @param model   the model's memory footprint (its layer count is the number of layers to place)
     * @param workers candidate workers; their order is the pipeline order and breaks ties
     * @return stages in pipeline order, covering {@code [0, numLayers)} exactly once, each within its
     *         worker's memory
     * @throws InfeasiblePlanException  if no plan fits the workers' memory
     * @throws IllegalArgumentException if the inputs are invalid
     */
    PartitionPlan plan(ModelFootprint model, List<WorkerCapacity> workers);

    /** Plans {@code numLayers} layers whose size is unknown (memory does not constrain the plan). */
    default PartitionPlan plan(int numLayers, List<WorkerCapacity> workers) {
        return plan(ModelFootprint.uniform(numLayers, 0), workers);
    }

    /** Checks the inputs every planner relies on. */
    static void requireValid(ModelFootprint model, List<WorkerCapacity> workers) {
        if (model == null) {
            throw new IllegalArgumentException("model footprint is required");
        }
        if (workers == null || workers.isEmpty()) {
            throw new IllegalArgumentException("at least one worker is needed");
        }
        java.util.Set<String> ids = new java.util.HashSet<>();
        for (WorkerCapacity w : workers) {
            if (!ids.add(w.nodeId())) {
                throw new IllegalArgumentException("worker " + w.nodeId() + " is listed twice");
            }
        }
    }

    /** Whether a worker with {@code memoryBytes} (0 = unknown, no cap) can hold layers {@code [start, end)}. */
    static boolean fits(ModelFootprint model, long memoryBytes, int start, int end) {
        return memoryBytes == 0 || model.stageBytes(start, end) <= memoryBytes;
    }
}
