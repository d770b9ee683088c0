package io.butterfly.coordinator.planning;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.tensor.SliceTree;
import java.util.ArrayList;
import java.util.List;

/**
 * Plans a dense Llama-family model with each stage's layers split by attention heads over {@code shards} workers
 * (docs/sharding.md, "Head parallelism"): the layers over the first {@code workers / shards} workers by the configured
 * planner, each stage's worker holding shard 0 (and the embedding or head), the following workers, {@code shards - 1}
 * per stage in pipeline order, one further shard each. Shard {@code i} is the i-th subtree of the layers' slice tree
 * ({@link SliceTree#cut}), carried in the plan as an {@link ExpertGroup} over slices instead of experts. Memory is
 * planned as if each stage's worker held its whole stage (a shard holds less). Pure; workers beyond
 * {@code stages * shards} are spares.
 */
public final class HeadSpread {

    private HeadSpread() {
    }

    /** The slices a layer of {@code config} splits into by heads: its key/value heads; 0 when it cannot be split. */
    public static int slices(ModelConfig config) {
        return config.experts() != null || config.architecture() == Architecture.GPT2 ? 0 : config.numKvHeads();
    }

    /**
     * @param slices a layer's slices ({@link #slices}), at least 1
     * @param shards head shards per stage (1, or fewer workers than that: the layer planner's plan as it is)
     * @throws InfeasiblePlanException a stage's worker cannot hold its stage
     */
    public static PartitionPlan plan(ModelFootprint model, int slices, List<WorkerCapacity> workers, int shards,
                                     PartitionPlanner layers) {
        PartitionPlanner.requireValid(model, workers);
        int k = Math.min(shards, slices);
        if (k <= 1 || workers.size() < k) {
            return layers.plan(model, workers);
        }
        int stages = Math.min(model.numLayers(), workers.size() / k);
        PartitionPlan plan = layers.plan(model, workers.subList(0, stages));
        List<SliceTree.Range> cut = new SliceTree(slices).cut(k);
        List<StageAssignment> out = new ArrayList<>();
        int next = plan.stages().size();
        for (StageAssignment s : plan.stages()) {
            List<ExpertGroup> holders = new ArrayList<>();
            for (int i = 0; i < k; i++) {
                String node = i == 0 ? s.nodeId() : workers.get(next++).nodeId();
                holders.add(new ExpertGroup(node, cut.get(i).first(), cut.get(i).end()));
            }
            out.add(new StageAssignment(s.nodeId(), s.layerStart(), s.layerEnd(), s.hasEmbedding(), s.hasHead(),
                    holders));
        }
        return new PartitionPlan(out);
    }
}
