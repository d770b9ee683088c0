package io.butterfly.common.quant;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * ggml's block formats against their definitions (ggml-common.h's structs, ggml-quants.c's reference functions):
 * blocks written field by field here decode to the values the format defines, and quantizing writes those fields in
 * that layout, byte for byte, with errors within what each format's steps allow.
 */
class GgmlQuantsTest {

    private static ByteBuffer le(int bytes) {
        return ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static float[] dequantize(GgmlType type, ByteBuffer blocks, int n) {
        float[] y = new float[n];
        GgmlQuants.dequantize(type, blocks.duplicate().order(ByteOrder.LITTLE_ENDIAN).rewind(), y, 0, n);
        return y;
    }

    private static ByteBuffer quantize(GgmlType type, float[] x) {
        ByteBuffer out = le((int) type.rowBytes(x.length));
        GgmlQuants.quantize(type, x, 0, x.length, out);
        assertThat(out.hasRemaining()).isFalse();
        return out.flip();
    }

    @Test
    void q8_0IsAHalfScaleThen32SignedBytes() {
        float[] x = new float[32];
        for (int j = 0; j < 32; j++) {
            x[j] = (j - 16) * 0.25f; // amax 4 at j = 0
        }
        ByteBuffer b = quantize(GgmlType.Q8_0, x);
        float d = 4f / 127;
        assertThat(b.getShort(0)).isEqualTo(Float16.fromFloat(d));
        for (int j = 0; j < 32; j++) {
            long expected = Math.round(Math.abs(x[j] * (1 / d))) * (long) Math.signum(x[j]); // roundf: ties away from 0
            assertThat(b.get(2 + j)).as("q[%d]", j).isEqualTo((byte) expected);
        }
        float[] y = dequantize(GgmlType.Q8_0, b, 32);
        float dh = Float16.toFloat(Float16.fromFloat(d));
        for (int j = 0; j < 32; j++) {
            assertThat(y[j]).isEqualTo(b.get(2 + j) * dh);
        }
    }

    @Test
    void q4_0KeepsValueJInTheLowNibbleOfByteJAndValueJPlus16InItsHighNibble() {
        ByteBuffer b = le(18).putShort(Float16.fromFloat(0.5f));
        for (int j = 0; j < 16; j++) {
            b.put((byte) (j | ((15 - j) << 4)));
        }
        float[] y = dequantize(GgmlType.Q4_0, b.flip(), 32);
        for (int j = 0; j < 16; j++) {
            assertThat(y[j]).isEqualTo((j - 8) * 0.5f);
            assertThat(y[j + 16]).isEqualTo((15 - j - 8) * 0.5f);
        }
        // The scale maps the value of largest magnitude to -8: here -3 at j = 5 gives d = 3/8
        float[] x = new float[32];
        for (int j = 0; j < 32; j++) {
            x[j] = j == 5 ? -3f : (j % 7 - 3) * 0.3f;
        }
        ByteBuffer q = quantize(GgmlType.Q4_0, x);
        assertThat(Float16.toFloat(q.getShort(0))).isEqualTo(Float16.toFloat(Float16.fromFloat(3f / 8)));
        assertThat(q.get(2 + 5) & 0x0F).isEqualTo(0); // -3 / (3/8) = -8, stored as 0
    }

    /** A Q4_K block from its fields: d, dmin, eight 6-bit (scale, min) pairs packed as get_scale_min_k4 reads them. */
    @Test
    void q4_KDecodesEachSubBlockWithItsOwnSixBitScaleAndMin() {
        Random rnd = new Random(1);
        int[] sc = new int[8];
        int[] mn = new int[8];
        int[] q = new int[256];
        for (int j = 0; j < 8; j++) {
            sc[j] = rnd.nextInt(64);
            mn[j] = rnd.nextInt(64);
        }
        for (int i = 0; i < 256; i++) {
            q[i] = rnd.nextInt(16);
        }
        byte[] packed = new byte[12];
        for (int j = 0; j < 8; j++) {
            if (j < 4) {
                packed[j] = (byte) sc[j];
                packed[j + 4] = (byte) mn[j];
            } else {
                packed[j + 4] = (byte) ((sc[j] & 0xF) | ((mn[j] & 0xF) << 4));
                packed[j - 4] |= (byte) ((sc[j] >> 4) << 6);
                packed[j] |= (byte) ((mn[j] >> 4) << 6);
            }
        }
        float d = 0.0625f;
        float dmin = 0.03125f;
        ByteBuffer b = le(144).putShort(Float16.fromFloat(d)).putShort(Float16.fromFloat(dmin)).put(packed);
        for (int pair = 0; pair < 4; pair++) { // 32 bytes per pair of sub-blocks: 2*pair low, 2*pair+1 high nibbles
            for (int l = 0; l < 32; l++) {
                b.put((byte) (q[64 * pair + l] | (q[64 * pair + 32 + l] << 4)));
            }
        }
        float[] y = dequantize(GgmlType.Q4_K, b.flip(), 256);
        for (int i = 0; i < 256; i++) {
            int j = i / 32;
            assertThat(GgmlQuants.scaleMinK4(j, packed)).containsExactly(sc[j], mn[j]);
            assertThat(y[i]).as("value %d", i).isEqualTo(d * sc[j] * q[i] - dmin * mn[j]);
        }
    }

    /** A Q6_K block from its fields: ql, qh, 16 signed scales and d last. */
    @Test
    void q6_KDecodesSixBitValuesFromNibblesAndBitPairs() {
        Random rnd = new Random(2);
        int[] q = new int[256];
        byte[] scales = new byte[16];
        for (int i = 0; i < 256; i++) {
            q[i] = rnd.nextInt(64);
        }
        for (int s = 0; s < 16; s++) {
            scales[s] = (byte) (rnd.nextInt(256) - 128);
        }
        byte[] ql = new byte[128];
        byte[] qh = new byte[64];
        for (int half = 0; half < 2; half++) {
            for (int l = 0; l < 32; l++) {
                int base = 128 * half;
                ql[64 * half + l] = (byte) ((q[base + l] & 0xF) | ((q[base + l + 64] & 0xF) << 4));
                ql[64 * half + l + 32] = (byte) ((q[base + l + 32] & 0xF) | ((q[base + l + 96] & 0xF) << 4));
                qh[32 * half + l] = (byte) ((q[base + l] >> 4) | ((q[base + l + 32] >> 4) << 2)
                        | ((q[base + l + 64] >> 4) << 4) | ((q[base + l + 96] >> 4) << 6));
            }
        }
        float d = 0.01f;
        ByteBuffer b = le(210).put(ql).put(qh).put(scales).putShort(Float16.fromFloat(d));
        float[] y = dequantize(GgmlType.Q6_K, b.flip(), 256);
        float dh = Float16.toFloat(Float16.fromFloat(d));
        for (int i = 0; i < 256; i++) {
            assertThat(y[i]).as("value %d", i).isEqualTo(dh * scales[i / 16] * (q[i] - 32));
        }
    }

    @Test
    void quantizedRowsAreCloseToTheirValuesWithinEachFormatsStep() {
        Random rnd = new Random(3);
        for (GgmlType type : new GgmlType[]{GgmlType.Q8_0, GgmlType.Q4_0, GgmlType.Q4_K, GgmlType.Q6_K}) {
            for (int trial = 0; trial < 20; trial++) {
                float[] x = new float[512];
                double scale = Math.pow(10, rnd.nextInt(5) - 3);
                for (int i = 0; i < x.length; i++) {
                    x[i] = (float) (rnd.nextGaussian() * scale);
                }
                float[] y = dequantize(type, quantize(type, x), x.length);
                int block = type.blockSize();
                for (int b = 0; b < x.length; b += Math.min(block, 32)) {
                    double amax = 0;
                    for (int i = b; i < b + Math.min(block, 32); i++) {
                        amax = Math.max(amax, Math.abs(x[i]));
                    }
                    // steps: Q8_0 amax/127, Q4_0 amax/8, Q4_K and Q6_K a 4- or 6-bit step of the sub-block's range
                    double step = switch (type) {
                        case Q8_0 -> amax / 127;
                        case Q6_K -> 2 * amax / 31;
                        default -> 2 * amax / 15;
                    };
                    for (int i = b; i < b + Math.min(block, 32); i++) {
                        assertThat((double) Math.abs(y[i] - x[i])).as("%s trial %d value %d", type, trial, i)
                                .isLessThanOrEqualTo(step * 1.01 + 1e-30);
                    }
                }
            }
        }
    }

    @Test
    void quantizingDequantizedQ8_0AndQ4_0BlocksGivesTheSameBytes() {
        Random rnd = new Random(4);
        for (GgmlType type : new GgmlType[]{GgmlType.Q8_0, GgmlType.Q4_0}) {
            float[] x = new float[256];
            for (int i = 0; i < x.length; i++) {
                x[i] = (float) rnd.nextGaussian();
            }
            ByteBuffer once = quantize(type, x);
            ByteBuffer twice = quantize(type, dequantize(type, once, x.length));
            assertThat(twice).as("%s", type).isEqualTo(once);
        }
    }

    @Test
    void cRoundingHelpersBehaveAsC() {
        assertThat(GgmlQuants.roundf(2.5f)).isEqualTo(3f);
        assertThat(GgmlQuants.roundf(-2.5f)).isEqualTo(-3f);
        assertThat(GgmlQuants.roundf(-2.4f)).isEqualTo(-2f);
        assertThat(GgmlQuants.nearestInt(2.5f)).isEqualTo(2); // ties to even, as ggml's float trick does
        assertThat(GgmlQuants.nearestInt(3.5f)).isEqualTo(4);
        assertThat(GgmlQuants.nearestInt(-1.5f)).isEqualTo(-2);
        assertThat(GgmlQuants.nearestInt(-7.49f)).isEqualTo(-7);
    }
}
