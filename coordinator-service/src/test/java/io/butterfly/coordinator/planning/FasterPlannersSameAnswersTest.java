package io.butterfly.coordinator.planning;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * The optimal planner and the multi-pipeline planner were made faster (issue #52: the k-pipeline plan of 1,000 workers
 * took 140 ms): a stage's memory in one subtraction, the table's scan stopped once a stage alone is slower than the
 * best so far, the last worker's row filled only where it is read, the feasibility check without its messages, the
 * pipelines' members gathered in one pass. None of that may change an answer: on seeded random pools, small (the
 * local search runs) and large (it does not), each gives exactly the plan, or the refusal, of the planners as they
 * were ({@link ReferenceOptimalPlanner}, {@link ReferenceMultiPipelinePlanner}: copies of them before the change).
 */
class FasterPlannersSameAnswersTest {

    private static final long MB = 1L << 20;

    @Test
    void theOptimalPlannerGivesThePlansItGaveBefore() {
        Random random = new Random(5206);
        OptimalPlanner faster = new OptimalPlanner();
        ReferenceOptimalPlanner before = new ReferenceOptimalPlanner();
        int planned = 0;
        int refused = 0;
        for (int trial = 0; trial < 1_000; trial++) {
            Pool in = Pool.random(random, 1 + random.nextInt(8), 1 + random.nextInt(random.nextBoolean() ? 12 : 64));
            String label = "trial " + trial + ": " + in;
            Object expected = outcome(() -> before.plan(in.model(), in.workers()));
            assertEquals(expected, outcome(() -> faster.plan(in.model(), in.workers())), label);
            planned += expected instanceof PartitionPlan ? 1 : 0;
            refused += expected instanceof String ? 1 : 0;
        }
        System.out.printf("single pipelines: %d planned, %d refused%n", planned, refused);
        assertTrue(planned > 400 && refused > 100, "the generator must give plans and refusals: " + planned + " planned, "
                + refused + " refused");
    }

    @Test
    void theMultiPipelinePlannerGivesThePlansItGaveBefore() {
        for (PlannerKind kind : PlannerKind.values()) {
            Random random = new Random(5207);
            MultiPipelinePlanner faster = new MultiPipelinePlanner(kind.create());
            ReferenceMultiPipelinePlanner before = new ReferenceMultiPipelinePlanner(
                    kind == PlannerKind.OPTIMAL ? new ReferenceOptimalPlanner() : kind.create());
            int planned = 0;
            int several = 0;
            for (int trial = 0; trial < 60; trial++) {
                // Most pools small enough for the local search to run, the others from 25 to 45 workers (it does not).
                int n = trial % 4 == 0 ? 25 + random.nextInt(21) : 2 + random.nextInt(11);
                Pool in = Pool.random(random, n, 1 + random.nextInt(random.nextBoolean() ? 12 : 32));
                int spares = random.nextInt(3);
                int wanted = random.nextInt(4) == 0 ? 1 + random.nextInt(4) : 0;
                String label = kind + " trial " + trial + " spares " + spares + " pipelines " + wanted + ": " + in;
                Object expected = outcome(() -> before.plan(in.model(), in.workers(), spares, wanted));
                assertEquals(expected, outcome(() -> faster.plan(in.model(), in.workers(), spares, wanted)), label);
                if (expected instanceof PipelinesPlan p) {
                    planned++;
                    several += p.pipelines().size() > 1 ? 1 : 0;
                }
            }
            System.out.printf("%s: %d of 60 planned, %d of them several pipelines%n", kind, planned, several);
            assertTrue(planned > 30 && several > 18, kind + ": the generator must give plans of several pipelines: "
                    + planned + " planned, " + several + " of several");
        }
    }

    /** The plan, or the refusal's message. */
    private static Object outcome(Supplier<Object> plan) {
        try {
            return plan.get();
        } catch (InfeasiblePlanException e) {
            return e.getMessage();
        }
    }

    /** A random model (layer sizes, embedding, head, headroom, sometimes a KV share) and a pool for it. */
    record Pool(ModelFootprint model, List<WorkerCapacity> workers) {

        static Pool random(Random random, int n, int layers) {
            long[] bytes = new long[layers];
            long kv = random.nextInt(4) == 0 ? random.nextInt(8) * MB : 0;
            for (int l = 0; l < layers; l++) {
                bytes[l] = kv + (random.nextInt(10) == 0 ? 0 : (1 + random.nextInt(64)) * MB);
            }
            ModelFootprint model = random.nextInt(20) == 0 ? ModelFootprint.uniform(layers, 0)
                    : new ModelFootprint(bytes, random.nextInt(200) * MB, random.nextInt(300) * MB,
                            random.nextInt(32) * MB, kv);
            long total = Math.max(model.totalBytes(1), MB);
            // Mostly workers that hold a third to a whole model: pipelines of one to a few workers, and refusals.
            double share = 0.2 + random.nextDouble();
            List<WorkerCapacity> workers = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                long memory = random.nextInt(15) == 0 ? 0 : (long) (total * share * (0.5 + random.nextDouble()));
                double gflops = random.nextInt(5) == 0 ? 40 : 1 + random.nextInt(100) + random.nextDouble();
                workers.add(new WorkerCapacity(String.format("w%03d", random.nextInt(1000) * 1000 + i), gflops, memory));
            }
            return new Pool(model, workers);
        }

        @Override
        public String toString() {
            return model + " over " + workers.size() + " workers";
        }
    }
}
