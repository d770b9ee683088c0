package io.butterfly.worker.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * A stage runs a step only if the step's epoch lies between the first epoch whose steps it runs (its pipeline
 * unchanged since, docs/scale-out.md) and its own epoch: an older step may be of another pipeline's route, a newer one
 * of an assignment it has not taken yet.
 */
class StepEpochFenceTest {

    @Test
    void aStepRunsExactlyWhenItsEpochLiesInTheStagesWindow() {
        Random r = new Random(52);
        for (int i = 0; i < 10_000; i++) {
            long epoch = 1 + r.nextInt(8);
            long from = 1 + r.nextInt((int) epoch);
            long step = r.nextInt(10);
            String refused = PipelineStage.refusal(step, from, epoch);
            assertThat(refused == null).as("step %d, window [%d, %d]", step, from, epoch)
                    .isEqualTo(step >= from && step <= epoch);
        }
        assertThat(PipelineStage.refusal(3, 3, 3)).isNull(); // as before: its own epoch
        assertThat(PipelineStage.refusal(1, 1, 2)).isNull(); // a kept pipeline's step across a re-plan of another
        assertThat(PipelineStage.refusal(1, 2, 2)).contains("runs steps of epochs 2 to 2 only");
        assertThat(PipelineStage.refusal(3, 1, 2)).contains("partition is of epoch 2");
    }
}
