package io.butterfly.coordinator.planning;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.tensor.SliceTree;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Planning a dense model's stages split by heads (docs/sharding.md, "Head parallelism") over seeded random models and
 * clusters: the layer ranges are the layer planner's over the first {@code n / k} workers, each stage's shards are the
 * slice tree's cut in order, shard 0 on the stage's worker and the others on distinct further workers; one shard, or
 * fewer workers than shards, is the layer planner's plan as it is.
 */
class HeadSpreadTest {

    private static final PartitionPlanner LAYERS = new CapacityWeightedPlanner();

    @Test
    void everyStagesShardsAreTheSliceTreesCutOnDistinctWorkers() {
        Random r = new Random(4903);
        for (int trial = 0; trial < 300; trial++) {
            int layers = 1 + r.nextInt(8);
            int slices = 1 + r.nextInt(16);
            int shards = 1 + r.nextInt(5);
            long[] layerBytes = r.longs(layers, 500, 1_000).toArray();
            ModelFootprint model = new ModelFootprint(layerBytes, 300, 400, 100);
            List<WorkerCapacity> workers = IntStream.range(0, 1 + r.nextInt(10))
                    .mapToObj(i -> new WorkerCapacity("w" + i, 5 + r.nextInt(40), 0)).toList();
            PartitionPlan plan = HeadSpread.plan(model, slices, workers, shards, LAYERS);
            String label = "trial " + trial + ": " + slices + " slices, " + shards + " shards, " + workers.size()
                    + " workers: " + plan;
            int k = Math.min(shards, slices);
            if (k <= 1 || workers.size() < k) {
                assertThat(plan).as(label).isEqualTo(LAYERS.plan(model, workers));
                continue;
            }
            int stages = Math.min(layers, workers.size() / k);
            PartitionPlan byLayers = LAYERS.plan(model, workers.subList(0, stages));
            assertThat(plan.stages()).as(label).hasSize(byLayers.stages().size());
            assertThat(plan.holders()).as(label).doesNotHaveDuplicates().hasSize(byLayers.stages().size() * k);
            List<SliceTree.Range> cut = new SliceTree(slices).cut(k);
            for (int i = 0; i < plan.stages().size(); i++) {
                StageAssignment s = plan.stages().get(i);
                StageAssignment l = byLayers.stages().get(i);
                assertThat(List.of(s.nodeId(), s.layerStart(), s.layerEnd(), s.hasEmbedding(), s.hasHead())).as(label)
                        .isEqualTo(List.of(l.nodeId(), l.layerStart(), l.layerEnd(), l.hasEmbedding(), l.hasHead()));
                assertThat(s.expertGroups().get(0).nodeId()).as(label).isEqualTo(s.nodeId());
                assertThat(s.expertGroups().stream().map(g -> new SliceTree.Range(g.firstExpert(), g.endExpert()))
                        .toList()).as(label).isEqualTo(cut);
            }
        }
    }

    @Test
    void onlyDenseLlamaFamilyModelsSplitByHeads() {
        ModelConfig llama = new ModelConfig(Architecture.LLAMA, 2, 64, 8, 4, 96, 300, 256, 1e-6, 500000.0, false, 1, 2);
        assertThat(HeadSpread.slices(llama)).isEqualTo(4);
        assertThat(HeadSpread.slices(new ModelConfig(Architecture.GPT2, 2, 64, 8, 8, 96, 300, 256, 1e-6, 10000.0, true,
                1, 2))).isZero();
        assertThat(HeadSpread.slices(llama.withExperts(new io.butterfly.common.model.MixtureOfExperts(
                io.butterfly.common.model.MixtureOfExperts.Kind.MIXTRAL, 8, 2, 96, 0, true, 1, List.of())))).isZero();
    }
}
