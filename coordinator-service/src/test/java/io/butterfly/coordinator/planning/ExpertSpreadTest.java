package io.butterfly.coordinator.planning;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * Planning a mixture of experts in expert groups, and re-planning after a group's worker is lost, over seeded random
 * models and clusters: every stage's groups cover its experts in order, each on a worker that can hold it; a lost group
 * goes whole to a spare (nothing else changes) or, with none, to the group before it; a lost stage worker takes its
 * group 0 to the spare that takes its stage.
 */
class ExpertSpreadTest {

    private static final PartitionPlanner LAYERS = new CapacityWeightedPlanner();

    private record Cluster(ModelFootprint model, ExpertFootprint experts, List<WorkerCapacity> workers, int groups) {

        static Cluster random(Random r) {
            int layers = 1 + r.nextInt(8);
            int experts = 2 + r.nextInt(30);
            long[] routed = new long[layers];
            long[] layerBytes = new long[layers];
            for (int l = 0; l < layers; l++) {
                routed[l] = r.nextInt(4) == 0 ? 0 : experts * (1_000L + r.nextInt(1_000)); // some layers dense
                layerBytes[l] = routed[l] + 500 + r.nextInt(500);
            }
            int groups = 2 + r.nextInt(Math.min(4, experts - 1));
            int stages = 1 + r.nextInt(Math.min(3, layers));
            List<WorkerCapacity> workers = IntStream.range(0, stages * groups + r.nextInt(3))
                    .mapToObj(i -> new WorkerCapacity("w" + i, 5 + r.nextInt(40), 0)).toList();
            return new Cluster(new ModelFootprint(layerBytes, 300, 400, 100), new ExpertFootprint(experts, routed),
                    workers, groups);
        }

        PartitionPlan plan() {
            return ExpertSpread.plan(model, experts, workers, groups, LAYERS);
        }
    }

    @Test
    void everyStagesGroupsCoverItsExpertsInOrderOnDistinctWorkers() {
        Random r = new Random(4901);
        for (int trial = 0; trial < 300; trial++) {
            Cluster c = Cluster.random(r);
            PartitionPlan plan = c.plan();
            String label = "trial " + trial + ": " + plan;
            int stages = Math.min(c.model().numLayers(), c.workers().size() / c.groups());
            assertThat(plan.stages()).as(label).hasSize(stages);
            assertThat(plan.holders()).as(label).doesNotHaveDuplicates().hasSize(stages * c.groups());
            for (StageAssignment s : plan.stages()) {
                assertThat(s.expertGroups()).as(label).hasSize(c.groups());
                assertThat(s.expertGroups().get(0).nodeId()).isEqualTo(s.nodeId());
                int[] sizes = s.expertGroups().stream().mapToInt(ExpertGroup::experts).toArray();
                assertThat(Arrays.stream(sizes).sum()).as(label).isEqualTo(c.experts().experts());
                assertThat(Arrays.stream(sizes).max().getAsInt() - Arrays.stream(sizes).min().getAsInt())
                        .as(label + ": shared out evenly").isLessThanOrEqualTo(1);
            }
            // The layer ranges are the layer planner's over the stages' workers.
            assertThat(plan.stages().stream().map(StageAssignment::withoutExpertGroups).toList()).as(label)
                    .isEqualTo(LAYERS.plan(c.model(), c.workers().subList(0, stages)).stages());
        }
    }

    @Test
    void aDenseModelOrOneGroupIsTheLayerPlannersPlan() {
        Random r = new Random(4903);
        for (int trial = 0; trial < 100; trial++) {
            Cluster c = Cluster.random(r);
            PartitionPlan layers = LAYERS.plan(c.model(), c.workers());
            assertThat(ExpertSpread.plan(c.model(), ExpertFootprint.none(), c.workers(), c.groups(), LAYERS))
                    .isEqualTo(layers);
            assertThat(ExpertSpread.plan(c.model(), c.experts(), c.workers(), 1, LAYERS)).isEqualTo(layers);
        }
    }

    @Test
    void aGroupsWorkerMustHoldItsExperts() {
        // One layer of 8 experts, 8,000 bytes of them: a group of 4 experts takes 4,000 bytes and the stage's headroom.
        ModelFootprint model = new ModelFootprint(new long[]{9_000}, 300, 400, 100);
        ExpertFootprint experts = new ExpertFootprint(8, new long[]{8_000});
        List<WorkerCapacity> fits = List.of(new WorkerCapacity("a", 10, 20_000), new WorkerCapacity("b", 10, 4_100));
        PartitionPlan plan = ExpertSpread.plan(model, experts, fits, 2, LAYERS);
        assertThat(plan.stages().get(0).expertGroups())
                .containsExactly(new ExpertGroup("a", 0, 4), new ExpertGroup("b", 4, 8));
        List<WorkerCapacity> small = List.of(new WorkerCapacity("a", 10, 20_000), new WorkerCapacity("b", 10, 4_099));
        assertThatThrownBy(() -> ExpertSpread.plan(model, experts, small, 2, LAYERS))
                .isInstanceOf(InfeasiblePlanException.class)
                .hasMessageContaining("expert group 1").hasMessageContaining("worker b");
    }

    @Test
    void aLostGroupGoesWholeToASpareAndNothingElseChanges() {
        Random r = new Random(4907);
        for (int trial = 0; trial < 200; trial++) {
            Cluster c = Cluster.random(r);
            PartitionPlan plan = c.plan();
            StageAssignment stage = plan.stages().get(r.nextInt(plan.stages().size()));
            int g = 1 + r.nextInt(stage.expertGroups().size() - 1);
            String lost = stage.expertGroups().get(g).nodeId();
            WorkerCapacity spare = new WorkerCapacity("spare", 7, 0);
            List<WorkerCapacity> workers = new ArrayList<>(c.workers().stream()
                    .filter(w -> plan.holders().contains(w.nodeId()) && !w.nodeId().equals(lost)).toList());
            workers.add(spare);
            Replanner.Replan replan = Replanner.replan(c.model(), c.experts(), plan.stages(), Set.of(lost), workers,
                    LAYERS);
            String label = "trial " + trial + ": " + lost + " lost from " + plan;
            List<StageAssignment> expected = plan.stages().stream().map(s -> s != stage ? s : new StageAssignment(
                    s.nodeId(), s.layerStart(), s.layerEnd(), s.hasEmbedding(), s.hasHead(),
                    s.expertGroups().stream().map(e -> e.nodeId().equals(lost) ? e.on("spare") : e).toList())).toList();
            assertThat(replan.plan().stages()).as(label).isEqualTo(expected);
            assertThat(replan.changed()).as(label).containsExactlyElementsOf(expected.get(plan.stages().indexOf(stage))
                    .holders());
            assertThat(replan.summary()).as(label).contains("spare spare takes experts");
        }
    }

    @Test
    void withoutASpareTheGroupBeforeTakesTheLostExperts() {
        ModelFootprint model = new ModelFootprint(new long[]{9_000, 9_000}, 300, 400, 100);
        ExpertFootprint experts = new ExpertFootprint(8, new long[]{8_000, 8_000});
        List<WorkerCapacity> workers = List.of(new WorkerCapacity("a", 10, 0), new WorkerCapacity("b", 10, 0),
                new WorkerCapacity("c", 10, 0));
        PartitionPlan plan = ExpertSpread.plan(model, experts, workers, 3, LAYERS);
        assertThat(plan.stages().get(0).expertGroups()).containsExactly(new ExpertGroup("a", 0, 3),
                new ExpertGroup("b", 3, 6), new ExpertGroup("c", 6, 8));
        Replanner.Replan lastLost = Replanner.replan(model, experts, plan.stages(), Set.of("c"), workers.subList(0, 2),
                LAYERS);
        assertThat(lastLost.plan().stages().get(0).expertGroups()).containsExactly(new ExpertGroup("a", 0, 3),
                new ExpertGroup("b", 3, 8));
        Replanner.Replan twoLost = Replanner.replan(model, experts, plan.stages(), Set.of("b", "c"),
                workers.subList(0, 1), LAYERS);
        assertThat(twoLost.plan().stages()).containsExactly(new StageAssignment("a", 0, 2, true, true));
    }

    @Test
    void aLostStageWorkerTakesGroupZeroToTheSpareTakingItsStage() {
        ModelFootprint model = new ModelFootprint(new long[]{9_000, 9_000}, 300, 400, 100);
        ExpertFootprint experts = new ExpertFootprint(8, new long[]{8_000, 8_000});
        List<WorkerCapacity> workers = List.of(new WorkerCapacity("a", 10, 0), new WorkerCapacity("b", 10, 0),
                new WorkerCapacity("c", 10, 0), new WorkerCapacity("s", 10, 0));
        PartitionPlan plan = ExpertSpread.plan(model, experts, workers.subList(0, 3), 3, LAYERS);
        Replanner.Replan replan = Replanner.replan(model, experts, plan.stages(), Set.of("a"), workers.subList(1, 4),
                LAYERS);
        assertThat(replan.plan().stages()).containsExactly(new StageAssignment("s", 0, 2, true, true, List.of(
                new ExpertGroup("s", 0, 3), new ExpertGroup("b", 3, 6), new ExpertGroup("c", 6, 8))));
    }

    @Test
    void groupsThatDoNotCoverTheExpertsInOrderAreRefused() {
        assertThatThrownBy(() -> new StageAssignment("a", 0, 2, true, true, List.of(new ExpertGroup("b", 0, 4),
                new ExpertGroup("a", 4, 8)))).hasMessageContaining("not on the stage's worker");
        assertThatThrownBy(() -> new StageAssignment("a", 0, 2, true, true, List.of(new ExpertGroup("a", 0, 4),
                new ExpertGroup("b", 5, 8)))).hasMessageContaining("do not cover");
        assertThatThrownBy(() -> new PartitionPlan(List.of(
                new StageAssignment("a", 0, 1, true, false, List.of(new ExpertGroup("a", 0, 4), new ExpertGroup("b", 4, 8))),
                new StageAssignment("b", 1, 2, false, true)))).hasMessageContaining("two stages");
    }
}
