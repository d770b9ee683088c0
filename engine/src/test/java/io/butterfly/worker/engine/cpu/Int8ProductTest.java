package io.butterfly.worker.engine.cpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.butterfly.common.quant.GgmlQuants;
import io.butterfly.common.quant.GgmlType;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The native kernels' products with 8-bit activations (bfk_q8.c) compute exactly the math they define: the dequantized
 * matrix (ggml's values) times each input rounded in blocks of 32 to {@code round(x * 127 / max|x|) * max|x| / 127}
 * (ties to even), here written from that definition in double precision. Only the order of float32 additions
 * differs, so the products agree to a few float32 ulps of the row's largest output; and the AVX2 and the portable
 * kernels give the same bits, one row alone or several together, and so do the VNNI ones where the CPU has them
 * (AVX-VNNI's or AVX512-VNNI's encoding, whichever the CPU has; on a CPU with neither, both runs take the AVX2
 * products) and the products from the rows interleaved
 * eight at a time as a stage keeps them (Q8_0, Q4_0, Q4_K and Q6_K: bfk_x8.c).
 */
class Int8ProductTest {

    @ParameterizedTest
    @EnumSource(value = GgmlType.class, names = {"Q8_0", "Q4_0", "Q4_K", "Q6_K"})
    void productsAreTheDequantizedMatrixTimesTheRoundedInputs(GgmlType type) {
        assumeTrue(NativeKernels.available(), () -> "native kernels: " + NativeKernels.loadError().orElse(""));
        System.out.println(type + " products on " + NativeKernels.instructionSet());
        Random rnd = new Random(type.ordinal() * 31L + 7);
        for (int round = 0; round < 6; round++) {
            int rows = round % 2 == 0 ? 8 * (2 + rnd.nextInt(6)) : 16 + rnd.nextInt(48); // some in groups of 8
            int cols = 256 * (1 + rnd.nextInt(4));
            int m = 1 + rnd.nextInt(7);
            float[] w = new float[rows * cols];
            for (int i = 0; i < w.length; i++) {
                w[i] = (float) (rnd.nextGaussian() * 0.05);
            }
            float[] x = new float[m * cols];
            for (int i = 0; i < x.length; i++) {
                // blocks of very different magnitudes, and some all zero (a scale of 0)
                int block = i / 32;
                x[i] = block % 11 == 3 ? 0f : (float) (rnd.nextGaussian() * Math.pow(10, (block % 5) - 2));
            }
            ByteBuffer blocks = direct((int) type.rowBytes(cols) * rows);
            for (int r = 0; r < rows; r++) {
                GgmlQuants.quantize(type, w, r * cols, cols, blocks);
            }
            if (type == GgmlType.Q8_0) {
                // -128, which ggml's quantizer never writes but a file may hold: the VNNI tiles' offset must not wrap
                for (int k = 0; k < 20; k++) {
                    blocks.put(34 * rnd.nextInt(rows * cols / 32) + 2 + rnd.nextInt(32), (byte) -128);
                }
            }
            float[] dequantized = new float[rows * cols];
            GgmlQuants.dequantize(type, blocks.duplicate().rewind(), dequantized, 0, dequantized.length);

            float[] avx = product(type, blocks, rows, cols, x, m, false);
            float[] portable = product(type, blocks, rows, cols, x, m, true);
            assertThat(portable).as("portable = AVX2").isEqualTo(avx);
            NativeKernels.forceWithoutVnni(true);
            try {
                assertThat(product(type, blocks, rows, cols, x, m, false)).as("AVX2 without VNNI = with").isEqualTo(avx);
            } finally {
                NativeKernels.forceWithoutVnni(false);
            }
            assertThat(interleaved(type, blocks, rows, cols, x, m, false)).as("rows interleaved = ggml's layout")
                    .isEqualTo(avx);
            assertThat(interleaved(type, blocks, rows, cols, x, m, true)).as("rows interleaved, portable")
                    .isEqualTo(avx);
            NativeKernels.forceWithoutVnni(true);
            try {
                assertThat(interleaved(type, blocks, rows, cols, x, m, false)).as("rows interleaved without VNNI")
                        .isEqualTo(avx);
            } finally {
                NativeKernels.forceWithoutVnni(false);
            }
            for (int i = 0; i < m; i++) {
                float[] alone = product(type, blocks, rows, cols, java.util.Arrays.copyOfRange(x, i * cols, (i + 1) * cols),
                        1, false);
                assertThat(alone).as("row %d alone", i).isEqualTo(java.util.Arrays.copyOfRange(avx, i * rows, (i + 1) * rows));
                double[] rounded = rounded(x, i * cols, cols);
                double[] expected = new double[rows];
                double largest = 0;
                for (int r = 0; r < rows; r++) {
                    for (int k = 0; k < cols; k++) {
                        expected[r] += (double) dequantized[r * cols + k] * rounded[k];
                    }
                    largest = Math.max(largest, Math.abs(expected[r]));
                }
                for (int r = 0; r < rows; r++) {
                    assertThat((double) avx[i * rows + r]).as("%s row %d output %d", type, i, r)
                            .isCloseTo(expected[r], org.assertj.core.data.Offset.offset(1e-5 * largest + 1e-30));
                }
            }
        }
    }

    /** The definition: blocks of 32, max|x| / 127 a step, round to nearest with ties to even, in float32 as stated. */
    private static double[] rounded(float[] x, int offset, int n) {
        double[] out = new double[n];
        for (int b = 0; b < n; b += 32) {
            float max = 0;
            for (int i = b; i < b + 32; i++) {
                max = Math.max(max, Math.abs(x[offset + i]));
            }
            float step = max / 127f;
            float inverse = max != 0 ? 127f / max : 0f;
            for (int i = b; i < b + 32; i++) {
                out[i] = Math.rint(x[offset + i] * inverse) * step;
            }
        }
        return out;
    }

    private static float[] product(GgmlType type, ByteBuffer blocks, int rows, int cols, float[] x, int m,
                                   boolean portable) {
        return product(type, blocks, rows, cols, x, m, portable, false);
    }

    /** As the stage computes it: from a copy with the rows interleaved eight at a time (bfk_x8.c). */
    private static float[] interleaved(GgmlType type, ByteBuffer blocks, int rows, int cols, float[] x, int m,
                                       boolean portable) {
        return product(type, blocks, rows, cols, x, m, portable, true);
    }

    private static float[] product(GgmlType type, ByteBuffer blocks, int rows, int cols, float[] x, int m,
                                   boolean portable, boolean interleaved) {
        ByteBuffer in = direct(x.length * Float.BYTES);
        in.asFloatBuffer().put(x);
        ByteBuffer out = direct(m * rows * Float.BYTES);
        long pool = NativeKernels.poolCreate(2);
        NativeKernels.forcePortable(portable);
        try {
            long w = NativeKernels.address(blocks);
            ByteBuffer copy = null;
            if (interleaved) {
                copy = direct(blocks.capacity());
                assertThat(NativeKernels.interleave(type.id(), rows, cols, w, NativeKernels.address(copy)))
                        .as("interleaving applies to %s x %d", type, rows).isEqualTo(rows % 8 == 0);
                if (rows % 8 == 0) {
                    w = NativeKernels.address(copy);
                } else {
                    interleaved = false;
                }
            }
            assertThat(NativeKernels.product(pool, type.id(), rows, cols, w, interleaved, NativeKernels.address(in), m,
                    true, NativeKernels.address(out))).isZero();
        } finally {
            NativeKernels.forcePortable(false);
            NativeKernels.poolDestroy(pool);
        }
        float[] y = new float[m * rows];
        out.asFloatBuffer().get(y);
        return y;
    }

    private static ByteBuffer direct(int bytes) {
        return ByteBuffer.allocateDirect(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }
}
