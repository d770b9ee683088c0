package io.butterfly.coordinator.planning;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Several pipelines over one pool of workers (issue #52): each a full copy of the model split into stages by the
 * configured planner, no worker in two pipelines, and the workers in none kept as spares.
 *
 * @param pipelines  the pipelines, each covering every layer; in the order the planner formed them
 * @param spares     the workers in no pipeline (they may take a lost stage of any pipeline), ordered by id
 * @param throughput the expected decode steps per unit of time of all pipelines together: the sum of each pipeline's
 *                   {@code 1 / slowest stage time} (a pipeline's token rate is bounded by its slowest stage)
 */
public record PipelinesPlan(List<PartitionPlan> pipelines, List<String> spares, double throughput) {

    public PipelinesPlan {
        pipelines = List.copyOf(pipelines);
        spares = List.copyOf(spares);
        if (pipelines.isEmpty()) {
            throw new IllegalArgumentException("a plan needs at least one pipeline");
        }
        Set<String> seen = new HashSet<>();
        for (PartitionPlan p : pipelines) {
            for (String id : p.pipeline()) {
                if (!seen.add(id)) {
                    throw new IllegalArgumentException("worker " + id + " is in two pipelines");
                }
            }
        }
        for (String id : spares) {
            if (!seen.add(id)) {
                throw new IllegalArgumentException("spare " + id + " is also in a pipeline");
            }
        }
    }

    /** The pipeline holding {@code nodeId} (its index), or -1 for a spare or a stranger. */
    public int pipelineOf(String nodeId) {
        for (int i = 0; i < pipelines.size(); i++) {
            if (pipelines.get(i).pipeline().contains(nodeId)) {
                return i;
            }
        }
        return -1;
    }

    /** Expected steps per unit of time of one pipeline: one over its slowest stage's time (0 for an empty list). */
    public static double throughput(ModelFootprint model, PartitionPlan plan, List<WorkerCapacity> workers) {
        return 1.0 / OptimalPlanner.bottleneck(model, plan, workers);
    }
}
