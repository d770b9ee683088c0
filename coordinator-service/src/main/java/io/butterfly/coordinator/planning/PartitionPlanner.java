package io.butterfly.coordinator.planning;

import java.util.List;

/** Splits a model's transformer layers over workers (initialization-and-bootstrap.md §4.2). */
public interface PartitionPlanner {

    /**
     * Plans the pipeline.
     *
     * @param numLayers number of transformer layers of the model (positive)
     * @param workers   candidate workers; their order is the pipeline order and breaks ties
     * @return stages in pipeline order, covering {@code [0, numLayers)} exactly once
     * @throws IllegalArgumentException if no valid plan exists for these inputs
     */
    PartitionPlan plan(int numLayers, List<WorkerCapacity> workers);
}
