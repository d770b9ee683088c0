package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.jni.IValue;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The router of the engine's mixture-of-experts layers ({@code route} in llama.py), on seeded random logits: the
 * experts it picks are the heaviest by softmax in descending order, of equal weights the lower expert first, and the
 * weights are renormalized over the chosen k exactly when asked.
 */
class RouterTest {

    private static final int ROWS = 64;

    @Test
    void picksTheHeaviestExpertsInOrderAndRenormalizesWhenAsked() throws Exception {
        Random rnd = new Random(11);
        for (int experts : new int[]{4, 8, 60, 128}) {
            float[] logits = new float[ROWS * experts];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = (float) (3 * rnd.nextGaussian());
            }
            int k = 1 + rnd.nextInt(Math.min(8, experts));
            Routed all = route(logits, experts, experts, false);
            Routed plain = route(logits, experts, k, false);
            Routed normalized = route(logits, experts, k, true);
            for (int r = 0; r < ROWS; r++) {
                double[] p = ReferenceModel.softmax(row(logits, r, experts));
                for (int j = 0; j < experts; j++) {
                    int e = all.expert(r, j);
                    assertThat((double) all.weight(r, j)).as("softmax weight of expert %d", e).isCloseTo(p[e], within(1e-6));
                    if (j > 0) {
                        assertThat(all.weight(r, j)).as("descending").isLessThanOrEqualTo(all.weight(r, j - 1));
                    }
                }
                assertThat(distinct(all, r, experts)).as("a permutation of the experts").isTrue();
                double sum = 0;
                for (int j = 0; j < k; j++) {
                    assertThat(plain.expert(r, j)).isEqualTo(all.expert(r, j));
                    assertThat(plain.weight(r, j)).as("not renormalized unless asked").isEqualTo(all.weight(r, j));
                    assertThat(normalized.expert(r, j)).isEqualTo(all.expert(r, j));
                    sum += plain.weight(r, j);
                }
                double normalizedSum = 0;
                for (int j = 0; j < k; j++) {
                    assertThat((double) normalized.weight(r, j)).isCloseTo(plain.weight(r, j) / sum, within(1e-6));
                    normalizedSum += normalized.weight(r, j);
                }
                assertThat(normalizedSum).isCloseTo(1.0, within(1e-6));
            }
        }
    }

    /** Logits from a set of three values: most rows have equal weights, which go to the lower expert first. */
    @Test
    void tiesGoToTheLowerExpert() throws Exception {
        Random rnd = new Random(12);
        for (int experts : new int[]{6, 8, 16}) {
            float[] logits = new float[ROWS * experts];
            for (int i = 0; i < logits.length; i++) {
                logits[i] = rnd.nextInt(3) * 0.75f;
            }
            int k = 2 + rnd.nextInt(3);
            Routed routed = route(logits, experts, k, true);
            for (int r = 0; r < ROWS; r++) {
                int[] expected = ReferenceModel.topK(row(logits, r, experts), k);
                for (int j = 0; j < k; j++) {
                    assertThat(routed.expert(r, j)).as("row %d, place %d of %s", r, j, Arrays.toString(row(logits, r, experts))).isEqualTo(expected[j]);
                }
            }
        }
    }

    private record Routed(float[] weights, long[] experts, int k) {
        float weight(int row, int j) {
            return weights[row * k + j];
        }

        int expert(int row, int j) {
            return (int) experts[row * k + j];
        }
    }

    private static Routed route(float[] logits, int experts, int k, boolean normalize) throws Exception {
        EngineSetup.start(0);
        try (NDManager m = NDManager.newBaseManager(EngineSetup.ENGINE);
             TorchScript script = TorchScript.compile(m, "LlamaStage", "llama.py", TorchScript.Linear.PLAIN, false);
             ScriptArgs args = new ScriptArgs();
             IValue flag = IValue.from(normalize)) {
            NDArray x = m.create(logits, new Shape(ROWS, experts));
            NDArray[] out = script.callForArrays(m, "route", args.tensor(x), args.integer(k), flag);
            assertThat(out[0].getShape().getShape()).containsExactly(ROWS, k);
            return new Routed(out[0].toFloatArray(), out[1].toLongArray(), k);
        }
    }

    private static boolean distinct(Routed all, int r, int experts) {
        boolean[] seen = new boolean[experts];
        for (int j = 0; j < experts; j++) {
            int e = all.expert(r, j);
            if (e < 0 || e >= experts || seen[e]) {
                return false;
            }
            seen[e] = true;
        }
        return true;
    }

    private static double[] row(float[] values, int r, int width) {
        double[] out = new double[width];
        for (int i = 0; i < width; i++) {
            out[i] = values[r * width + i];
        }
        return out;
    }

}
