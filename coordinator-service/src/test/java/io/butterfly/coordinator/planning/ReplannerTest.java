package io.butterfly.coordinator.planning;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/**
 * The re-plan after a lost stage, over every single-stage loss of seeded random pipelines: with a spare only the spare
 * loads (the lost range, unchanged); without one only the lost stage's neighbours change; every plan covers the model
 * within each worker's memory; and when the workers left cannot hold the model the error says need and capacity.
 */
class ReplannerTest {

    private static final PartitionPlanner FALLBACK = new CapacityWeightedPlanner();

    /** A pipeline of {@code stages} workers w0.. over {@code layers} uniform layers, with its footprint. */
    private record Pipeline(ModelFootprint model, List<StageAssignment> stages, List<WorkerCapacity> workers) {

        static Pipeline random(Random r, int stages, long memory) {
            int layers = stages + r.nextInt(12);
            long[] layerBytes = new long[layers];
            for (int l = 0; l < layers; l++) {
                layerBytes[l] = 1_000 + r.nextInt(500);
            }
            ModelFootprint model = new ModelFootprint(layerBytes, 3_000, 4_000, 200);
            List<WorkerCapacity> workers = IntStream.range(0, stages)
                    .mapToObj(i -> new WorkerCapacity("w" + i, 5 + r.nextInt(40), memory)).toList();
            return new Pipeline(model, FALLBACK.plan(model, workers).stages(), workers);
        }

        List<WorkerCapacity> without(String lost, WorkerCapacity... spares) {
            List<WorkerCapacity> out = new ArrayList<>(workers.stream().filter(w -> !w.nodeId().equals(lost)).toList());
            out.addAll(List.of(spares));
            return out;
        }
    }

    @Test
    void withASpareOnlyTheSpareLoadsTheLostRangeUnchanged() {
        Random r = new Random(3301);
        for (int trial = 0; trial < 200; trial++) {
            Pipeline p = Pipeline.random(r, 1 + r.nextInt(5), 0);
            WorkerCapacity slow = new WorkerCapacity("s-slow", 1, 0);
            WorkerCapacity fast = new WorkerCapacity("s-fast", 100, 0);
            for (StageAssignment lost : p.stages()) {
                Replanner.Replan replan = Replanner.replan(p.model(), p.stages(), Set.of(lost.nodeId()),
                        p.without(lost.nodeId(), slow, fast), FALLBACK);
                String label = "trial " + trial + ", " + lost.nodeId() + " lost from " + p.stages();
                List<StageAssignment> expected = p.stages().stream().map(s -> s.equals(lost)
                        ? new StageAssignment("s-fast", s.layerStart(), s.layerEnd(), s.hasEmbedding(), s.hasHead())
                        : s).toList();
                assertThat(replan.plan().stages()).as(label).isEqualTo(expected);
                assertThat(replan.changed()).as(label).containsExactly("s-fast");
                assertThat(replan.summary()).as(label).contains("spare s-fast takes");
            }
        }
    }

    @Test
    void withoutASpareOnlyTheLostStagesNeighboursChange() {
        Random r = new Random(3302);
        for (int trial = 0; trial < 200; trial++) {
            Pipeline p = Pipeline.random(r, 2 + r.nextInt(5), 0);
            for (int i = 0; i < p.stages().size(); i++) {
                StageAssignment lost = p.stages().get(i);
                List<WorkerCapacity> workers = p.without(lost.nodeId());
                Replanner.Replan replan = Replanner.replan(p.model(), p.stages(), Set.of(lost.nodeId()), workers,
                        FALLBACK);
                String label = "trial " + trial + ", " + lost.nodeId() + " lost from " + p.stages();
                assertValid(replan.plan(), p.model(), workers, label);
                assertThat(replan.plan().pipeline()).as(label).doesNotContain(lost.nodeId())
                        .hasSize(p.stages().size() - 1);
                Set<String> neighbours = IntStream.of(i - 1, i + 1).filter(j -> j >= 0 && j < p.stages().size())
                        .mapToObj(j -> p.stages().get(j).nodeId()).collect(Collectors.toSet());
                assertThat(neighbours).as(label).containsAll(replan.changed());
                assertThat(replan.changed()).as(label).hasSize(1); // one neighbour can always hold it: memory unknown
                for (StageAssignment s : replan.plan().stages()) {
                    if (!replan.changed().contains(s.nodeId())) {
                        assertThat(p.stages()).as(label).contains(s);
                    }
                }
            }
        }
    }

    @Test
    void aSpareTooSmallForTheLostStageIsPassedOverAndANeighbourTooSmallForItIsToo() {
        // Five layers of 100 B: w0 [0,2) w1 [2,4) w2 [4,5); w1 is lost.
        ModelFootprint model = new ModelFootprint(new long[] {100, 100, 100, 100, 100}, 0, 0, 0);
        List<StageAssignment> current = List.of(new StageAssignment("w0", 0, 2, true, false),
                new StageAssignment("w1", 2, 4, false, false), new StageAssignment("w2", 4, 5, false, true));
        WorkerCapacity tinySpare = new WorkerCapacity("spare", 50, 150);
        WorkerCapacity w0 = new WorkerCapacity("w0", 10, 250); // cannot hold [0,4)
        WorkerCapacity w2 = new WorkerCapacity("w2", 10, 1_000);
        Replanner.Replan replan = Replanner.replan(model, current, Set.of("w1"), List.of(w0, w2, tinySpare), FALLBACK);
        assertThat(replan.plan().stages()).containsExactly(new StageAssignment("w0", 0, 2, true, false),
                new StageAssignment("w2", 2, 5, false, true));
        assertThat(replan.changed()).containsExactly("w2");
    }

    @Test
    void whenNeitherNeighbourCanHoldTheLostRangeAloneItIsSplitBetweenThem() {
        ModelFootprint model = new ModelFootprint(new long[] {100, 100, 100, 100, 100, 100}, 0, 0, 0);
        List<StageAssignment> current = List.of(new StageAssignment("w0", 0, 2, true, false),
                new StageAssignment("w1", 2, 4, false, false), new StageAssignment("w2", 4, 6, false, true));
        List<WorkerCapacity> workers = List.of(new WorkerCapacity("w0", 10, 300), new WorkerCapacity("w2", 10, 300));
        Replanner.Replan replan = Replanner.replan(model, current, Set.of("w1"), workers, FALLBACK);
        assertThat(replan.plan().stages()).containsExactly(new StageAssignment("w0", 0, 3, true, false),
                new StageAssignment("w2", 3, 6, false, true));
        assertThat(replan.changed()).containsExactly("w0", "w2");
    }

    @Test
    void whenNoNeighbourCanTakeItEveryStageIsPlannedAnew() {
        // w1 is lost; w0 and w2 are full, w3 (a spare) can hold two layers but not w1's three.
        ModelFootprint model = new ModelFootprint(new long[] {100, 100, 100, 100, 100}, 0, 0, 0);
        List<StageAssignment> current = List.of(new StageAssignment("w0", 0, 1, true, false),
                new StageAssignment("w1", 1, 4, false, false), new StageAssignment("w2", 4, 5, false, true));
        List<WorkerCapacity> workers = List.of(new WorkerCapacity("w0", 10, 100), new WorkerCapacity("w2", 10, 200),
                new WorkerCapacity("w3", 10, 200));
        Replanner.Replan replan = Replanner.replan(model, current, Set.of("w1"), workers, FALLBACK);
        assertValid(replan.plan(), model, workers, "planned anew");
        assertThat(replan.plan().pipeline()).containsExactly("w0", "w2", "w3");
        assertThat(replan.summary()).contains("every stage planned anew");
    }

    @Test
    void whenTheWorkersLeftCannotHoldTheModelTheErrorSaysNeedAndCapacity() {
        ModelFootprint model = new ModelFootprint(new long[] {100, 100, 100, 100}, 0, 0, 0);
        List<StageAssignment> current = List.of(new StageAssignment("w0", 0, 2, true, false),
                new StageAssignment("w1", 2, 4, false, true));
        List<WorkerCapacity> survivors = List.of(new WorkerCapacity("w0", 10, 250));
        assertThatThrownBy(() -> Replanner.replan(model, current, Set.of("w1"), survivors, FALLBACK))
                .isInstanceOf(InfeasiblePlanException.class)
                .hasMessageStartingWith("InsufficientResources: the model needs 400 bytes")
                .hasMessageContaining("have 250 bytes")
                .satisfies(e -> {
                    InfeasiblePlanException i = (InfeasiblePlanException) e;
                    assertThat(i.requiredBytes()).isEqualTo(400);
                    assertThat(i.availableBytes()).isEqualTo(250);
                });
        assertThatThrownBy(() -> Replanner.replan(model, current, Set.of("w0", "w1"), List.of(), FALLBACK))
                .isInstanceOf(InfeasiblePlanException.class)
                .hasMessage("InsufficientResources: the model needs 400 bytes and no worker is left to hold it");
    }

    /** Any loss of one or two stages, spares or none, memory tight or not: a valid plan within memory, or infeasible. */
    @Test
    void seededRandomLossesGiveAValidPlanWithinMemoryOrSayInfeasible() {
        Random r = new Random(3303);
        int feasible = 0;
        for (int trial = 0; trial < 500; trial++) {
            Pipeline p = Pipeline.random(r, 2 + r.nextInt(4), 0);
            List<StageAssignment> stages = p.stages();
            Set<String> lost = r.ints(1 + r.nextInt(2), 0, stages.size()).mapToObj(i -> stages.get(i).nodeId())
                    .collect(Collectors.toSet());
            long total = p.model().totalBytes(1);
            List<WorkerCapacity> workers = new ArrayList<>();
            for (int i = 0; i < stages.size(); i++) {
                StageAssignment s = stages.get(i);
                if (!lost.contains(s.nodeId())) { // a survivor holds at least its stage as planned
                    long held = p.model().stageBytes(s.layerStart(), s.layerEnd());
                    workers.add(new WorkerCapacity(s.nodeId(), p.workers().get(i).gflops(),
                            Math.max(held, total / (1 + r.nextInt(4)))));
                }
            }
            for (int s = 0; s < r.nextInt(3); s++) {
                workers.add(new WorkerCapacity("spare" + s, 1 + r.nextInt(50), total / (1 + r.nextInt(6))));
            }
            String label = "trial " + trial + ": " + lost + " lost from " + stages + ", workers " + workers;
            Replanner.Replan replan;
            try {
                replan = Replanner.replan(p.model(), stages, lost, workers, FALLBACK);
            } catch (InfeasiblePlanException e) {
                assertThat(e.getMessage()).as(label).startsWith("InsufficientResources");
                continue;
            }
            feasible++;
            assertValid(replan.plan(), p.model(), workers, label);
            assertThat(replan.plan().pipeline()).as(label).doesNotContainAnyElementsOf(lost);
            assertThat(Replanner.replan(p.model(), stages, lost, workers, FALLBACK)).as(label + " (deterministic)")
                    .isEqualTo(replan);
        }
        assertThat(feasible).as("most instances must be feasible").isGreaterThan(250);
    }

    private static void assertValid(PartitionPlan plan, ModelFootprint model, List<WorkerCapacity> workers, String label) {
        assertThat(plan.numLayers()).as(label).isEqualTo(model.numLayers());
        for (StageAssignment s : plan.stages()) {
            WorkerCapacity w = workers.stream().filter(c -> c.nodeId().equals(s.nodeId())).findFirst().orElseThrow();
            assertThat(PartitionPlanner.fits(model, w.memoryBytes(), s.layerStart(), s.layerEnd()))
                    .as(label + ": " + s + " within " + w.memoryBytes()).isTrue();
        }
    }
}
