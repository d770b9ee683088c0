package io.butterfly.worker.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.sampling.GreedyChoice;
import io.butterfly.worker.engine.StageResult;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The last stage's outcome of a mixed batch: each greedy sequence's row becomes its summary, the sampled sequences'
 * rows go whole and in batch order, and a row that cannot be summarized sends every row whole.
 */
class StepOutcomeTest {

    private static final StageClock CLOCK = new StageClock("w1", 0, 0);

    @Test
    void greedyRowsAreSummarizedAndTheOthersSentWholeInBatchOrder() {
        Random random = new Random(7);
        for (int trial = 0; trial < 50; trial++) {
            int vocab = 1 + random.nextInt(300);
            List<Step.Slice> slices = new ArrayList<>();
            int sampling = 0;
            for (int i = 0, n = 1 + random.nextInt(6); i < n; i++) {
                boolean skip = random.nextInt(4) == 0;
                boolean greedy = random.nextBoolean();
                slices.add(slice("s" + i, skip, greedy, random.nextInt(5)));
                sampling += skip ? 0 : 1;
            }
            float[] rows = new float[sampling * vocab];
            for (int i = 0; i < rows.length; i++) {
                rows[i] = (float) random.nextGaussian() * 3;
            }
            StepOutcome outcome = StepOutcome.logits(step(slices), result(rows, sampling, vocab), CLOCK);

            List<GreedyChoice> greedy = new ArrayList<>();
            List<Float> whole = new ArrayList<>();
            int r = 0;
            for (Step.Slice s : slices) {
                if (s.skipLogits()) {
                    continue;
                }
                if (s.greedy()) {
                    greedy.add(GreedyChoice.of(rows, r * vocab, vocab, s.greedyAlternatives()));
                } else {
                    for (int j = 0; j < vocab; j++) {
                        whole.add(rows[r * vocab + j]);
                    }
                }
                r++;
            }
            boolean anyGreedy = !greedy.isEmpty();
            assertThat(outcome.greedy()).isEqualTo(anyGreedy ? greedy : List.of());
            float[] sent = outcome.logits().toFloats();
            if (anyGreedy) {
                assertThat(outcome.logits().shape()).containsExactly(whole.size() / vocab, vocab);
                float[] expected = new float[whole.size()];
                for (int i = 0; i < expected.length; i++) {
                    expected[i] = whole.get(i);
                }
                assertThat(sent).containsExactly(expected);
            } else {
                assertThat(sent).containsExactly(rows);
            }
        }
    }

    @Test
    void aRowThatCannotBeSummarizedSendsEveryRowWhole() {
        float[] rows = {1, 2, 3, Float.NaN, 0, 1};
        List<Step.Slice> slices = List.of(slice("a", false, true, 1), slice("b", false, true, 0));
        StepOutcome outcome = StepOutcome.logits(step(slices), result(rows, 2, 3), CLOCK);
        assertThat(outcome.greedy()).isEmpty();
        assertThat(Arrays.toString(outcome.logits().toFloats())).isEqualTo(Arrays.toString(rows));
    }

    private static Step.Slice slice(String id, boolean skip, boolean greedy, int alternatives) {
        return new Step.Slice(id, 0, 1, 8, Map.of(), skip, greedy, alternatives);
    }

    private static Step step(List<Step.Slice> slices) {
        return new Step("t", 0, 1, slices, null, List.of(), null, List.of());
    }

    private static StageResult result(float[] rows, int n, int vocab) {
        ByteBuffer bytes = ByteBuffer.allocate(rows.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        bytes.asFloatBuffer().put(rows);
        return new StageResult(bytes, new long[]{n, vocab}, true);
    }
}
