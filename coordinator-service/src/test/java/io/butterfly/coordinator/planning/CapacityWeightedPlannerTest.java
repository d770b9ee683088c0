package io.butterfly.coordinator.planning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class CapacityWeightedPlannerTest {

    private final CapacityWeightedPlanner planner = new CapacityWeightedPlanner();

    private static List<WorkerCapacity> workers(double... gflops) {
        List<WorkerCapacity> out = new ArrayList<>();
        for (int i = 0; i < gflops.length; i++) {
            out.add(new WorkerCapacity("w" + i, gflops[i], 0));
        }
        return out;
    }

    private static List<Integer> counts(PartitionPlan plan) {
        return plan.stages().stream().map(StageAssignment::numLayers).toList();
    }

    @Test
    void singleWorkerHoldsEverything() {
        PartitionPlan plan = planner.plan(12, workers(5));
        assertEquals(List.of(new StageAssignment("w0", 0, 12, true, true)), plan.stages());
        assertEquals(12, plan.numLayers());
    }

    @Test
    void equalWorkersSplitEvenlyWithEmbeddingFirstAndHeadLast() {
        PartitionPlan plan = planner.plan(32, workers(10, 10, 10, 10));
        assertEquals(List.of(
                new StageAssignment("w0", 0, 8, true, false),
                new StageAssignment("w1", 8, 16, false, false),
                new StageAssignment("w2", 16, 24, false, false),
                new StageAssignment("w3", 24, 32, false, true)), plan.stages());
        assertEquals(List.of("w0", "w1", "w2", "w3"), plan.pipeline());
    }

    @Test
    void sharesFollowThroughput() {
        assertEquals(List.of(6, 2), counts(planner.plan(8, workers(3, 1))));
        assertEquals(List.of(2, 4, 6), counts(planner.plan(12, workers(1, 2, 3))));
    }

    @Test
    void largestRemainderDropsNoLayerAndBreaksTiesByOrder() {
        // Quotas 3.33 each: the leftover layer goes to the first worker.
        assertEquals(List.of(4, 3, 3), counts(planner.plan(10, workers(1, 1, 1))));
        // Quotas 2.5, 1.5, 1.0 -> floors 2,1,1, remainders tie at .5: the earlier worker wins.
        assertEquals(List.of(3, 1, 1), counts(planner.plan(5, workers(5, 3, 2))));
    }

    @Test
    void everyWorkerGetsALayerWhenThereAreEnough() {
        // Quotas 3.96 and 0.04 would leave the slow worker idle.
        assertEquals(List.of(3, 1), counts(planner.plan(4, workers(100, 1))));
        assertEquals(List.of(2, 1, 1, 1), counts(planner.plan(5, workers(1000, 1, 1, 1))));
    }

    @Test
    void fewerLayersThanWorkersUsesTheFastestWorkers() {
        PartitionPlan plan = planner.plan(2, workers(1, 5, 5));
        assertEquals(List.of("w1", "w2"), plan.pipeline());
        assertTrue(plan.stages().get(0).hasEmbedding());
        assertTrue(plan.stages().get(1).hasHead());
    }

    @Test
    void memoryCapsAShareAndTheRestGoesToOthers() {
        CapacityWeightedPlanner capped = new CapacityWeightedPlanner(10);
        List<WorkerCapacity> ws = List.of(
                new WorkerCapacity("fast", 100, 25),   // fits 2 layers
                new WorkerCapacity("slow1", 1, 1000),
                new WorkerCapacity("slow2", 3, 0));    // unknown memory: uncapped
        assertEquals(List.of(2, 2, 6), counts(capped.plan(10, ws)));
        assertThrows(IllegalArgumentException.class, () -> capped.plan(10,
                List.of(new WorkerCapacity("a", 1, 30), new WorkerCapacity("b", 1, 30))));
    }

    /**
     * The last stage's work includes the LM head: 32 layers of 100 bytes and a head of 350 (3.5 layers' worth) over
     * three equal workers is 35.5 layers' worth, 11.83 each, so the last worker takes 8.33 layers: 12/12/8.
     */
    @Test
    void theHeadCountsAsTheLastStagesWorkInLayersWorth() {
        long[] layers = new long[32];
        java.util.Arrays.fill(layers, 100);
        ModelFootprint withHead = new ModelFootprint(layers, 5_000, 350, 0);
        assertEquals(List.of(12, 12, 8), counts(planner.plan(withHead, workers(1, 1, 1))));
        assertEquals(3.5, CapacityWeightedPlanner.headInLayers(withHead), 1e-9);
        // The embedding is a lookup: memory, not work.
        assertEquals(List.of(11, 11, 10), counts(planner.plan(new ModelFootprint(layers, 5_000, 0, 0),
                workers(1, 1, 1))));
        // A head larger than a slow last worker's share: it keeps one layer, the others share the rest.
        assertEquals(List.of(15, 16, 1), counts(planner.plan(new ModelFootprint(layers, 0, 1_000, 0),
                workers(10, 10, 1))));
    }

    /**
     * Seeded random footprints (layers of one size, a head from none to ten layers' worth) and throughputs: where every
     * worker's ideal share is at least a layer, each worker's work in layers' worth (its layers, and the head on the last)
     * is within one layer of its share of the whole by throughput.
     */
    @Test
    void randomizedSharesOfTheWorkHeadIncludedAreWithinALayerOfProportional() {
        Random random = new Random(20261202L);
        int checked = 0;
        for (int trial = 0; trial < 2000; trial++) {
            int n = 1 + random.nextInt(6);
            int numLayers = n + random.nextInt(60);
            long layerBytes = 1 + random.nextInt(1_000_000);
            long head = random.nextInt(4) == 0 ? 0 : (long) (random.nextDouble() * 10 * layerBytes);
            long[] layers = new long[numLayers];
            java.util.Arrays.fill(layers, layerBytes);
            double[] gflops = new double[n];
            double total = 0;
            for (int i = 0; i < n; i++) {
                gflops[i] = random.nextInt(3) == 0 ? 10 : 1 + random.nextDouble() * 50;
                total += gflops[i];
            }
            ModelFootprint model = new ModelFootprint(layers, random.nextInt(1000), head, 0);
            PartitionPlan plan = planner.plan(model, workers(gflops));
            double headLayers = (double) head / layerBytes;
            double units = numLayers + headLayers;
            double[] ideal = new double[n];
            boolean everyShareAtLeastALayer = true;
            for (int i = 0; i < n; i++) {
                ideal[i] = units * gflops[i] / total - (i == n - 1 ? headLayers : 0);
                everyShareAtLeastALayer &= ideal[i] >= 1;
            }
            String label = "trial " + trial + ": layers=" + numLayers + " head=" + headLayers + " gflops="
                    + java.util.Arrays.toString(gflops) + " plan=" + counts(plan);
            assertEquals(numLayers, plan.numLayers(), label);
            assertTrue(plan.stages().get(plan.stages().size() - 1).hasHead(), label);
            if (!everyShareAtLeastALayer) {
                continue;
            }
            checked++;
            assertEquals(n, plan.stages().size(), label);
            for (int i = 0; i < n; i++) {
                assertTrue(Math.abs(plan.stages().get(i).numLayers() - ideal[i]) < 1 + 1e-9, label + " worker " + i);
            }
        }
        assertTrue(checked > 1000, "instances checked: " + checked);
    }

    @Test
    void rejectsInvalidInput() {
        assertThrows(IllegalArgumentException.class, () -> planner.plan(0, workers(1)));
        assertThrows(IllegalArgumentException.class, () -> planner.plan(4, List.of()));
        assertThrows(IllegalArgumentException.class, () -> planner.plan(4,
                List.of(new WorkerCapacity("a", 1, 0), new WorkerCapacity("a", 2, 0))));
        assertThrows(IllegalArgumentException.class, () -> new WorkerCapacity("a", 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new WorkerCapacity("a", Double.NaN, 0));
        assertThrows(IllegalArgumentException.class, () -> new CapacityWeightedPlanner(-1));
        assertThrows(IllegalArgumentException.class, () -> new PartitionPlan(List.of(
                new StageAssignment("a", 0, 2, true, false), new StageAssignment("b", 3, 4, false, true))));
        assertThrows(IllegalArgumentException.class, () -> new StageAssignment("a", 2, 2, true, true));
    }

    @Test
    void randomizedInstancesSatisfyTheInvariants() {
        Random random = new Random(20240517L);
        for (int trial = 0; trial < 2000; trial++) {
            int n = 1 + random.nextInt(9);
            int layers = 1 + random.nextInt(96);
            double[] gflops = new double[n];
            for (int i = 0; i < n; i++) {
                // Mix wide ranges and exact ties.
                gflops[i] = random.nextInt(4) == 0 ? 10.0 : 0.01 + random.nextDouble() * (random.nextBoolean() ? 10 : 1000);
            }
            List<WorkerCapacity> ws = workers(gflops);
            String label = "trial " + trial + ": layers=" + layers + " gflops=" + java.util.Arrays.toString(gflops);
            PartitionPlan plan = planner.plan(layers, ws);
            assertEquals(plan, planner.plan(layers, ws), label + " (deterministic)");

            // Every layer exactly once, contiguous, in pipeline = input order.
            int[] owners = new int[layers];
            int next = 0;
            int previousIndex = -1;
            for (int s = 0; s < plan.stages().size(); s++) {
                StageAssignment st = plan.stages().get(s);
                assertEquals(next, st.layerStart(), label);
                assertTrue(st.layerEnd() > st.layerStart(), label);
                for (int l = st.layerStart(); l < st.layerEnd(); l++) {
                    owners[l]++;
                }
                next = st.layerEnd();
                assertEquals(s == 0, st.hasEmbedding(), label);
                assertEquals(s == plan.stages().size() - 1, st.hasHead(), label);
                int index = Integer.parseInt(st.nodeId().substring(1));
                assertTrue(index > previousIndex, label + " keeps input order");
                previousIndex = index;
            }
            assertEquals(layers, next, label);
            for (int l = 0; l < layers; l++) {
                assertEquals(1, owners[l], label + " layer " + l);
            }

            int[] c = new int[n];
            plan.stages().forEach(st -> c[Integer.parseInt(st.nodeId().substring(1))] = st.numLayers());
            double total = 0;
            for (double g : gflops) {
                total += g;
            }
            boolean minOneNeeded = false;
            for (int i = 0; i < n; i++) {
                double quota = layers * gflops[i] / total;
                minOneNeeded |= quota < 1;
                if (layers >= n) {
                    assertTrue(c[i] >= 1, label + " worker " + i + " idle");
                }
            }
            for (int i = 0; i < n; i++) {
                double quota = layers * gflops[i] / total;
                if (!minOneNeeded) {
                    // Pure largest remainder: within one layer of the ideal share.
                    assertTrue(Math.abs(c[i] - quota) < 1, label + " worker " + i + " got " + c[i] + " for quota " + quota);
                }
                for (int j = 0; j < n; j++) {
                    if (gflops[i] > gflops[j]) {
                        assertTrue(c[i] >= c[j], label + " faster worker " + i + " got fewer layers than " + j);
                    }
                }
            }
        }
    }

    @Test
    void randomizedMemoryCapsAreRespected() {
        Random random = new Random(7);
        for (int trial = 0; trial < 1000; trial++) {
            int n = 1 + random.nextInt(6);
            int layers = 1 + random.nextInt(60);
            List<WorkerCapacity> ws = new ArrayList<>();
            long totalCap = 0;
            for (int i = 0; i < n; i++) {
                long mem = random.nextInt(3) == 0 ? 0 : random.nextInt(40) * 10L;
                ws.add(new WorkerCapacity("w" + i, 0.1 + random.nextDouble() * 50, mem));
                totalCap += mem == 0 ? layers : Math.min(layers, mem / 10);
            }
            CapacityWeightedPlanner capped = new CapacityWeightedPlanner(10);
            if (totalCap < layers) {
                int l = layers;
                assertThrows(IllegalArgumentException.class, () -> capped.plan(l, ws));
                continue;
            }
            PartitionPlan plan = capped.plan(layers, ws);
            assertEquals(layers, plan.numLayers());
            for (StageAssignment st : plan.stages()) {
                long mem = ws.stream().filter(w -> w.nodeId().equals(st.nodeId())).findFirst().orElseThrow().memoryBytes();
                if (mem > 0) {
                    assertTrue(st.numLayers() <= mem / 10, "trial " + trial + ": " + st + " exceeds memory " + mem);
                }
            }
            assertFalse(plan.stages().isEmpty());
        }
    }
}
