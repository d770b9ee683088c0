package io.butterfly.worker.engine.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;

/**
 * One query's attention (bfk_attend) computes softmax(q . k * scale) times the values, as written here from the
 * definition in double precision, to float32 rounding; the AVX2 and the portable kernels give the same bits, whatever
 * the length (the AVX2 scores take positions four at a time) and the head size (values 64 at a time, then 8). Peaked
 * attention over hundreds of positions makes most weights smaller than the smallest normal float: they count as zero
 * on both paths (a subnormal operand costs Intel's multiply-adds a micro-code assist), which moves no output by more
 * than the tolerance.
 */
class AttentionKernelTest {

    @Test
    void attentionIsTheSoftmaxWeightedValuesOnBothPaths() {
        assumeTrue(NativeKernels.available(), () -> "native kernels: " + NativeKernels.loadError().orElse(""));
        Random rnd = new Random(20261203);
        for (int round = 0; round < 40; round++) {
            int hd = new int[]{8, 64, 80, 128}[rnd.nextInt(4)];
            int len = 1 + rnd.nextInt(round % 4 == 0 ? 9 : 700);
            // scale spread: flat attention, and peaked enough that far positions' weights are subnormal or zero
            float scale = (float) Math.pow(10, rnd.nextInt(4) - 1);
            float[] q = gaussian(rnd, hd);
            float[] keys = gaussian(rnd, len * hd);
            float[] values = gaussian(rnd, len * hd);

            float[] avx = attend(q, keys, values, len, hd, scale, false);
            float[] portable = attend(q, keys, values, len, hd, scale, true);
            assertThat(portable).as("portable = AVX2, len %d, hd %d, scale %s", len, hd, scale).isEqualTo(avx);

            double[] s = new double[len];
            double max = Double.NEGATIVE_INFINITY;
            for (int u = 0; u < len; u++) {
                for (int e = 0; e < hd; e++) {
                    s[u] += (double) q[e] * keys[u * hd + e];
                }
                s[u] *= scale;
                max = Math.max(max, s[u]);
            }
            double sum = 0;
            for (int u = 0; u < len; u++) {
                s[u] = Math.exp(s[u] - max);
                sum += s[u];
            }
            for (int e = 0; e < hd; e++) {
                double expected = 0;
                for (int u = 0; u < len; u++) {
                    expected += s[u] / sum * values[u * hd + e];
                }
                assertThat((double) avx[e]).as("len %d, hd %d, scale %s, value %d", len, hd, scale, e)
                        .isCloseTo(expected, Offset.offset(1e-4 * (1 + Math.abs(expected))));
            }
        }
    }

    private static float[] gaussian(Random rnd, int n) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) rnd.nextGaussian();
        }
        return out;
    }

    private static float[] attend(float[] q, float[] keys, float[] values, int len, int hd, float scale,
                                  boolean portable) {
        ByteBuffer qb = floats(q);
        ByteBuffer kb = floats(keys);
        ByteBuffer vb = floats(values);
        ByteBuffer scores = direct(len * Float.BYTES);
        ByteBuffer out = direct(hd * Float.BYTES);
        NativeKernels.forcePortable(portable);
        try {
            NativeKernels.attend(NativeKernels.address(qb), NativeKernels.address(kb), NativeKernels.address(vb), len, hd,
                    scale, NativeKernels.address(scores), NativeKernels.address(out));
        } finally {
            NativeKernels.forcePortable(false);
        }
        float[] y = new float[hd];
        out.asFloatBuffer().get(y);
        return y;
    }

    private static ByteBuffer floats(float[] x) {
        ByteBuffer b = direct(x.length * Float.BYTES);
        b.asFloatBuffer().put(x);
        return b;
    }

    private static ByteBuffer direct(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }
}
