package io.butterfly.coordinator.planning;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * {@code expert-groups=0}: the planner chooses the number of expert groups from the workers' memory, the fewest whose
 * plan every worker can hold, so that a stage larger than one worker is served with its experts spread.
 */
class ExpertGroupsByMemoryTest {

    private static final PartitionPlanner LAYERS = new CapacityWeightedPlanner();
    private static final long MB = 1_000_000;

    @Test
    void aLayerLargerThanAnyWorkerIsSpreadOverTheFewestGroupsThatFit() {
        // One layer: 800 MB of experts (8 of 100 MB) beside 100 MB of attention and router; 400 MB workers.
        ModelFootprint model = new ModelFootprint(new long[]{900 * MB}, 20 * MB, 30 * MB, 10 * MB);
        ExpertFootprint experts = new ExpertFootprint(8, new long[]{800 * MB});
        List<WorkerCapacity> workers = IntStream.range(0, 5)
                .mapToObj(i -> new WorkerCapacity("w" + i, 10, 400 * MB)).toList();
        assertThatThrownBy(() -> ExpertSpread.plan(model, experts, workers, 1, LAYERS))
                .isInstanceOf(InfeasiblePlanException.class);
        // two groups: group 0 keeps 4 experts, 400 + 100 + 60 MB; three: 3 experts, 300 + 160 MB; four: 2, 360 MB
        PartitionPlan plan = ExpertSpread.plan(model, experts, workers, ExpertSpread.BY_MEMORY, LAYERS);
        assertThat(plan.stages()).hasSize(1);
        assertThat(plan.stages().get(0).expertGroups()).containsExactly(new ExpertGroup("w0", 0, 2),
                new ExpertGroup("w1", 2, 4), new ExpertGroup("w2", 4, 6), new ExpertGroup("w3", 6, 8));
    }

    @Test
    void theChosenNumberOfGroupsIsTheFewestWhosePlanEveryWorkerHolds() {
        Random r = new Random(4907);
        int spread = 0;
        int unspread = 0;
        int refused = 0;
        for (int trial = 0; trial < 300; trial++) {
            int layers = 1 + r.nextInt(6);
            int count = 2 + r.nextInt(14);
            long[] routed = new long[layers];
            long[] layerBytes = new long[layers];
            long total = 0;
            for (int l = 0; l < layers; l++) {
                routed[l] = r.nextInt(5) == 0 ? 0 : count * (1_000L + r.nextInt(1_000));
                layerBytes[l] = routed[l] + 300 + r.nextInt(300);
                total += layerBytes[l];
            }
            ModelFootprint model = new ModelFootprint(layerBytes, 200, 300, 50);
            ExpertFootprint experts = new ExpertFootprint(count, routed);
            long memory = total / (1 + r.nextInt(6)) + 600;
            List<WorkerCapacity> workers = IntStream.range(0, 1 + r.nextInt(8))
                    .mapToObj(i -> new WorkerCapacity("w" + i, 5 + r.nextInt(20), memory)).toList();
            String label = "trial " + trial + ": " + count + " experts, " + workers.size() + " workers of " + memory
                    + " B, layers " + java.util.Arrays.toString(layerBytes);
            PartitionPlan plan;
            try {
                plan = ExpertSpread.plan(model, experts, workers, ExpertSpread.BY_MEMORY, LAYERS);
            } catch (InfeasiblePlanException e) {
                refused++;
                for (int g = 1; g <= Math.min(count, workers.size()); g++) {
                    int groups = g;
                    assertThatThrownBy(() -> ExpertSpread.plan(model, experts, workers, groups, LAYERS)).as(label)
                            .isInstanceOf(InfeasiblePlanException.class);
                }
                continue;
            }
            int chosen = plan.stages().get(0).expertGroups().isEmpty() ? 1 : plan.stages().get(0).expertGroups().size();
            if (chosen == 1) {
                unspread++;
                assertThat(plan).as(label).isEqualTo(LAYERS.plan(model, workers));
            } else {
                spread++;
            }
            assertThat(plan).as(label).isEqualTo(ExpertSpread.plan(model, experts, workers, chosen, LAYERS));
            for (int g = 1; g < chosen; g++) {
                int groups = g;
                assertThatThrownBy(() -> ExpertSpread.plan(model, experts, workers, groups, LAYERS))
                        .as(label + ": fewer groups").isInstanceOf(InfeasiblePlanException.class);
            }
            for (StageAssignment s : plan.stages()) {
                assertThat(s.expertGroups().size()).as(label).isEqualTo(chosen == 1 ? 0 : chosen);
                for (int i = 0; i < s.expertGroups().size(); i++) {
                    ExpertGroup group = s.expertGroups().get(i);
                    assertThat(ExpertSpread.need(model, experts, s, group, i == 0)).as(label + ": group " + i)
                            .isLessThanOrEqualTo(memory);
                }
                if (chosen == 1) {
                    assertThat(model.stageBytes(s.layerStart(), s.layerEnd())).as(label).isLessThanOrEqualTo(memory);
                }
            }
        }
        assertThat(spread).as("plans that spread experts").isGreaterThan(20);
        assertThat(unspread).as("plans that did not need to").isGreaterThan(20);
        assertThat(refused).as("clusters too small whatever the groups").isGreaterThan(5);
    }
}
