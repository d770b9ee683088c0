package io.butterfly.coordinator.simulation;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.planning.ModelFootprint;
import org.junit.jupiter.api.Test;

/**
 * The simulated aggregate throughput of k pipelines (issue #52's "at least 0.9·k of one"): the real planner forms
 * the pipelines and the real router spreads the requests.
 */
class ServingSimulationTest {

    /** 80 layers of 0.5 GB (41 GB with the embedding and head): three 16 GB-class workers per pipeline. */
    private static final ModelFootprint MODEL = ScaleSimulation.footprint(ScaleSimulation.Settings.of(3));

    private static ServingSimulation simulation(long seed) {
        ServingSimulation.Settings d = ServingSimulation.Settings.of();
        return new ServingSimulation(new ServingSimulation.Settings(d.workersPerPipeline(), d.gflops(),
                d.clientsPerPipeline(), d.maxRunning(), d.promptTokens(), d.userTokens(), d.systemPrompts(),
                d.generated(), d.chunkTokens(), 10_000, 20_000, seed), MODEL);
    }

    @Test
    void onePipelineGeneratesAtMostItsSlowestStageAllows() {
        ServingSimulation.Row one = simulation(1).run(1);
        assertThat(one.pipelines()).isEqualTo(1);
        assertThat(one.workers()).isEqualTo(3);
        // 16 clients, three stages of about 13.7 GB at 50 GB/s: at most 16 tokens every ~0.29 s (prefill passes too).
        double slowestStageMs = 28 * 512.0 * (1 << 20) / 50e9 * 1000; // a stage of 27-28 layers (and the head)
        assertThat(one.tokensPerSecond()).isPositive().isLessThanOrEqualTo(16 / (slowestStageMs / 1000) * 1.01);
        assertThat(one.requests()).isPositive();
    }

    @Test
    void kPipelinesGenerateAtLeastNineTenthsOfKTimesOne() {
        for (long seed = 1; seed <= 3; seed++) {
            ServingSimulation sim = simulation(seed);
            double one = sim.run(1).tokensPerSecond();
            for (int k : new int[] {2, 3, 8, 33}) {
                ServingSimulation.Row r = sim.run(k);
                assertThat(r.pipelines()).as("seed %d: pipelines planned over %d workers", seed, r.workers())
                        .isEqualTo(k);
                assertThat(r.tokensPerSecond()).as("seed %d, %d pipelines against %d x %.1f", seed, k, k, one)
                        .isGreaterThanOrEqualTo(0.9 * k * one);
            }
        }
    }

    /**
     * Pipelines of different speeds (workers of 20-80 GFLOP/s, two or three stages each): the planner forms them and the
     * router spreads the clients so that together they generate at least 0.9 of the sum of what each does alone, its
     * running limit kept full.
     */
    @Test
    void pipelinesOfDifferentSpeedsTogetherGenerateAtLeastNineTenthsOfTheSumOfTheirCapacities() {
        for (long seed = 1; seed <= 3; seed++) {
            for (int workers : new int[] {12, 30, 99}) {
                ServingSimulation.Mixed m = simulation(seed).runMixed(workers, 20, 80, seed * 1_000 + workers);
                assertThat(m.pipelines()).as("seed %d, %d workers", seed, workers).isGreaterThanOrEqualTo(2);
                assertThat(m.fastest()).as("seed %d, %d workers: pipelines of different speeds %s", seed, workers,
                        m.capacities()).isGreaterThan(1.3 * m.slowest());
                assertThat(m.tokensPerSecond()).as("seed %d, %d workers: together against the sum of %s", seed,
                        workers, m.capacities()).isGreaterThanOrEqualTo(0.9 * m.capacity());
            }
        }
    }
}
