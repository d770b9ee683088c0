package io.butterfly.coordinator.planning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class OptimalPlannerTest {

    private final OptimalPlanner planner = new OptimalPlanner();

    @Test
    void equalsBruteForceOnSeededRandomInstances() {
        Random random = new Random(20261123);
        int feasible = 0;
        for (int trial = 0; trial < 600; trial++) {
            Instance in = Instance.random(random, 1 + random.nextInt(8), 1 + random.nextInt(4));
            double brute = bruteForce(in.model, in.workers);
            String label = "trial " + trial + ": " + in;
            if (brute == Double.POSITIVE_INFINITY) {
                assertThrows(InfeasiblePlanException.class, () -> planner.plan(in.model, in.workers), label);
                continue;
            }
            feasible++;
            PartitionPlan plan = planner.plan(in.model, in.workers);
            assertValid(plan, in.model, in.workers, label);
            assertEquals(brute, OptimalPlanner.bottleneck(in.model, plan, in.workers), label);
            assertEquals(plan, planner.plan(in.model, in.workers), label + " (deterministic)");
        }
        assertTrue(feasible > 200, "the generator must produce mostly feasible instances, got " + feasible);
    }

    @Test
    void neverWorseThanCapacityWeightedAndBothRespectMemory() {
        Random random = new Random(99);
        CapacityWeightedPlanner weighted = new CapacityWeightedPlanner();
        for (int trial = 0; trial < 300; trial++) {
            Instance in = Instance.random(random, 1 + random.nextInt(40), 1 + random.nextInt(6));
            PartitionPlan w;
            try {
                w = weighted.plan(in.model, in.workers);
            } catch (InfeasiblePlanException e) {
                continue;
            }
            String label = "trial " + trial + ": " + in;
            assertValid(w, in.model, in.workers, label + " (capacity-weighted)");
            PartitionPlan o = planner.plan(in.model, in.workers);
            assertValid(o, in.model, in.workers, label + " (optimal)");
            assertTrue(OptimalPlanner.bottleneck(in.model, o, in.workers) <= OptimalPlanner.bottleneck(in.model, w, in.workers), label);
        }
    }

    @Test
    void heterogeneousWorkersGetDifferentRanges() {
        List<WorkerCapacity> ws = List.of(new WorkerCapacity("slow", 10, 0), new WorkerCapacity("mid", 20, 0),
                new WorkerCapacity("fast", 30, 0));
        PartitionPlan plan = planner.plan(ModelFootprint.uniform(12, 0), ws);
        assertEquals(List.of(2, 4, 6), plan.stages().stream().map(StageAssignment::numLayers).toList());
        // Memory makes a difference too: the fast worker can hold only 3 layers of 100 bytes.
        List<WorkerCapacity> capped = List.of(new WorkerCapacity("a", 10, 0), new WorkerCapacity("b", 10, 0),
                new WorkerCapacity("c", 100, 350));
        ModelFootprint weighed = ModelFootprint.uniform(12, 100);
        PartitionPlan p2 = planner.plan(weighed, capped);
        // 9 layers left for two 10-GFLOP/s workers: 5 on one of them (500 B of weights) is the best possible bottleneck.
        assertEquals(50.0, OptimalPlanner.bottleneck(weighed, p2, capped));
        assertTrue(p2.stages().get(2).numLayers() <= 3);
        assertEquals(5, p2.stages().get(0).numLayers());
        assertNotEquals(plan, p2);
    }

    @Test
    void embeddingHeadAndHeadroomCountAgainstTheEndStages() {
        long[] layers = {100, 100, 100, 100};
        ModelFootprint model = new ModelFootprint(layers, 250, 250, 10);
        // 360 B each: a middle stage fits 3 layers, an end stage holds its big piece plus one layer.
        List<WorkerCapacity> ws = List.of(new WorkerCapacity("a", 1, 360), new WorkerCapacity("b", 1, 360),
                new WorkerCapacity("c", 1, 360));
        PartitionPlan plan = planner.plan(model, ws);
        assertEquals(List.of(1, 2, 1), plan.stages().stream().map(StageAssignment::numLayers).toList());
        assertValid(plan, model, ws, "ends");
    }

    @Test
    void theLmHeadCountsAsWorkOfTheLastStage() {
        // bench-100m's shape: 12 layers of 28.3 MB of weights, a 98.3 MB head, a KV cache of 12.6 MB per layer
        // (2048 positions of keys and values, 768 wide, float32).
        long weights = 28_311_552;
        long kv = 12_582_912;
        long[] layers = new long[12];
        java.util.Arrays.fill(layers, weights + kv);
        ModelFootprint model = new ModelFootprint(layers, 98_304_000, 98_307_072, 64 << 20, kv);
        List<WorkerCapacity> equal = List.of(new WorkerCapacity("a", 60, 0), new WorkerCapacity("b", 60, 0),
                new WorkerCapacity("c", 60, 0));
        PartitionPlan plan = planner.plan(model, equal);
        assertEquals(List.of(5, 5, 2), plan.stages().stream().map(StageAssignment::numLayers).toList());
        // The capacity-weighted planner shares out the same work (the head in layers' worth): the same plan here.
        assertEquals(plan, new CapacityWeightedPlanner().plan(model, equal));
        PartitionPlan byLayers = new PartitionPlan(List.of(new StageAssignment("a", 0, 4, true, false),
                new StageAssignment("b", 4, 8, false, false), new StageAssignment("c", 8, 12, false, true)));
        // The last stage's 2 layers and head against 4 layers and head: (2 * 28.3 + 98.3) / (4 * 28.3 + 98.3).
        assertEquals((2.0 * weights + 98_307_072) / (4 * weights + 98_307_072),
                OptimalPlanner.bottleneck(model, plan, equal) / OptimalPlanner.bottleneck(model, byLayers, equal), 1e-12);
        // The KV cache is capacity, not per-step work: without it the plan is the same.
        long[] weightsOnly = new long[12];
        java.util.Arrays.fill(weightsOnly, weights);
        assertEquals(plan, planner.plan(new ModelFootprint(weightsOnly, 98_304_000, 98_307_072, 64 << 20), equal));
    }

    @Test
    void withoutLayerWeightsAHeadSizeDoesNotSkewTheSplit() {
        // Every layer's bytes are KV cache: no layer weight is known, so layers are counted (not 0 work but the head's).
        long[] kvOnly = new long[6];
        java.util.Arrays.fill(kvOnly, 100);
        ModelFootprint model = new ModelFootprint(kvOnly, 0, 500, 0, 100);
        List<WorkerCapacity> equal = List.of(new WorkerCapacity("a", 1, 0), new WorkerCapacity("b", 1, 0),
                new WorkerCapacity("c", 1, 0));
        assertEquals(List.of(2, 2, 2), planner.plan(model, equal).stages().stream().map(StageAssignment::numLayers)
                .toList());
    }

    @Test
    void infeasibleClustersGetTheFeasibilityError() {
        ModelFootprint model = ModelFootprint.uniform(10, 100);
        List<WorkerCapacity> ws = List.of(new WorkerCapacity("a", 1, 300), new WorkerCapacity("b", 1, 300));
        InfeasiblePlanException e = assertThrows(InfeasiblePlanException.class, () -> planner.plan(model, ws));
        assertEquals(1000, e.requiredBytes());
        assertEquals(600, e.availableBytes());
        assertTrue(e.getMessage().startsWith("InsufficientResources"), e.getMessage());
        // Enough in total but too fragmented: no worker holds a 2-layer end piece... and the split fails.
        ModelFootprint big = new ModelFootprint(new long[] {100, 100}, 0, 0, 0);
        List<WorkerCapacity> tiny = List.of(new WorkerCapacity("a", 1, 60), new WorkerCapacity("b", 1, 60),
                new WorkerCapacity("c", 1, 90));
        assertThrows(InfeasiblePlanException.class, () -> planner.plan(big, tiny));
        assertThrows(InfeasiblePlanException.class, () -> new CapacityWeightedPlanner().plan(big, tiny));
    }

    /** Every layer once, contiguous from 0, ends flagged, each stage within its worker's memory. */
    static void assertValid(PartitionPlan plan, ModelFootprint model, List<WorkerCapacity> workers, String label) {
        int next = 0;
        for (StageAssignment s : plan.stages()) {
            assertEquals(next, s.layerStart(), label);
            assertTrue(s.layerEnd() > s.layerStart(), label);
            next = s.layerEnd();
            long mem = workers.stream().filter(w -> w.nodeId().equals(s.nodeId())).findFirst().orElseThrow()
                    .memoryBytes();
            assertTrue(mem == 0 || model.stageBytes(s.layerStart(), s.layerEnd()) <= mem,
                    label + ": " + s + " needs " + model.stageBytes(s.layerStart(), s.layerEnd()) + " > " + mem);
        }
        assertEquals(model.numLayers(), next, label);
        assertTrue(plan.stages().get(0).hasEmbedding(), label);
        assertTrue(plan.stages().get(plan.stages().size() - 1).hasHead(), label);
        // Pipeline follows the workers' order.
        List<String> order = workers.stream().map(WorkerCapacity::nodeId).filter(plan.pipeline()::contains).toList();
        assertEquals(order, plan.pipeline(), label);
    }

    /** Every composition of the layers over the workers in order (0 allowed): the minimal bottleneck. */
    static double bruteForce(ModelFootprint model, List<WorkerCapacity> workers) {
        return search(model, workers, 0, 0, 0);
    }

    private static double search(ModelFootprint model, List<WorkerCapacity> ws, int worker, int start, double soFar) {
        int layers = model.numLayers();
        if (start == layers) {
            return soFar;
        }
        if (worker == ws.size()) {
            return Double.POSITIVE_INFINITY;
        }
        double best = search(model, ws, worker + 1, start, soFar);
        WorkerCapacity w = ws.get(worker);
        for (int end = start + 1; end <= layers; end++) {
            if (w.memoryBytes() != 0 && model.stageBytes(start, end) > w.memoryBytes()) {
                continue;
            }
            best = Math.min(best, search(model, ws, worker + 1, end, Math.max(soFar, work(model, start, end) / w.gflops())));
        }
        return best;
    }

    /** A stage's per-step work: its layers' weights and the head if it is last; layers when no layer weights are known. */
    private static double work(ModelFootprint model, int start, int end) {
        long layerWeights = 0;
        for (int l = 0; l < model.numLayers(); l++) {
            layerWeights += model.layerBytes()[l] - model.kvBytesPerLayer();
        }
        if (layerWeights == 0) {
            return end - start;
        }
        long stage = end == model.numLayers() ? model.headBytes() : 0;
        for (int l = start; l < end; l++) {
            stage += model.layerBytes()[l] - model.kvBytesPerLayer();
        }
        return stage;
    }

    record Instance(ModelFootprint model, List<WorkerCapacity> workers) {

        static Instance random(Random random, int layers, int n) {
            long[] bytes = new long[layers];
            long total = 0;
            for (int i = 0; i < layers; i++) {
                bytes[i] = 50 + random.nextInt(100);
                total += bytes[i];
            }
            ModelFootprint model = new ModelFootprint(bytes, random.nextInt(80), random.nextInt(80), random.nextInt(20),
                    random.nextInt(50)); // a KV cache within every layer's 50+ bytes
            List<WorkerCapacity> ws = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                // Integer throughputs make ties (several optimal plans) common: the DP must still hit the optimum.
                double gflops = random.nextBoolean() ? 1 + random.nextInt(4) : 0.5 + random.nextDouble() * 20;
                long mem = random.nextInt(5) == 0 ? 0 : (long) (total * (0.2 + random.nextDouble() * 1.2) / n) + 100;
                ws.add(new WorkerCapacity("w" + i, gflops, mem));
            }
            return new Instance(model, ws);
        }

        @Override
        public String toString() {
            return model + " " + workers;
        }
    }

    @Test
    void capacityWeightedRespectsFootprintCaps() {
        ModelFootprint model = new ModelFootprint(new long[] {100, 100, 100, 100, 100, 100}, 50, 50, 0);
        List<WorkerCapacity> ws = List.of(new WorkerCapacity("a", 100, 260), new WorkerCapacity("b", 1, 0),
                new WorkerCapacity("c", 1, 0));
        PartitionPlan plan = new CapacityWeightedPlanner().plan(model, ws);
        assertEquals(2, plan.stages().get(0).numLayers()); // 2 layers + embedding = 250 <= 260
        assertValid(plan, model, ws, "caps");
        assertFalse(plan.stages().isEmpty());
    }
}
