package io.butterfly.common.quant;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * ggml's block formats Q8_0, Q4_0, Q4_K and Q6_K, quantized and dequantized as ggml's reference code does
 * ({@code quantize_row_*_ref} and {@code dequantize_row_*} in ggml-quants.c, the functions llama.cpp writes model
 * files with), byte for byte and bit for bit: the same floats in give the same blocks out, and a block gives the same
 * floats back. Float arithmetic is float32 throughout, in the reference's order, and rounding helpers behave like
 * C's ({@code roundf}, {@code nearest_int}, truncating casts).
 *
 * <p>Blocks (little-endian, {@code half} = IEEE binary16):
 * <ul>
 *   <li>Q8_0, 32 values in 34 bytes: {@code half d; int8 q[32]}; value = q * d.</li>
 *   <li>Q4_0, 32 values in 18 bytes: {@code half d; uint8 q[16]}, value j in the low nibble of byte j and value
 *       j + 16 in its high nibble; value = (nibble - 8) * d.</li>
 *   <li>Q4_K, 256 values in 144 bytes: {@code half d, dmin; uint8 scales[12]; uint8 q[128]}: 8 sub-blocks of 32 with
 *       6-bit scale and min each (packed, see {@link #scaleMinK4}); value = d * scale * nibble - dmin * min; each 32
 *       bytes of q hold sub-block 2i in their low nibbles and 2i + 1 in their high ones.</li>
 *   <li>Q6_K, 256 values in 210 bytes: {@code uint8 ql[128], qh[64]; int8 scales[16]; half d}: 16 sub-blocks of 16
 *       with an 8-bit scale each; value = d * scale * (q - 32) for the 6-bit q split into ql's nibbles and qh's bit
 *       pairs.</li>
 * </ul>
 */
public final class GgmlQuants {

    private static final float GROUP_MAX_EPS = 1e-15f;
    private static final int QK_K = 256;

    private GgmlQuants() {
    }

    /** Quantizes {@code n} values of {@code x} from {@code offset} into {@code out} at its position, advancing it. */
    public static void quantize(GgmlType type, float[] x, int offset, int n, ByteBuffer out) {
        ByteBuffer o = out.order(ByteOrder.LITTLE_ENDIAN);
        checkWhole(type, n);
        switch (type) {
            case F32 -> {
                for (int i = 0; i < n; i++) {
                    o.putFloat(x[offset + i]);
                }
            }
            case F16 -> {
                for (int i = 0; i < n; i++) {
                    o.putShort(Float16.fromFloat(x[offset + i]));
                }
            }
            case Q8_0 -> {
                for (int b = 0; b < n; b += 32) {
                    quantizeQ8_0(x, offset + b, o);
                }
            }
            case Q4_0 -> {
                for (int b = 0; b < n; b += 32) {
                    quantizeQ4_0(x, offset + b, o);
                }
            }
            case Q4_K -> {
                for (int b = 0; b < n; b += QK_K) {
                    quantizeQ4K(x, offset + b, o);
                }
            }
            case Q6_K -> {
                for (int b = 0; b < n; b += QK_K) {
                    quantizeQ6K(x, offset + b, o);
                }
            }
            default -> throw new IllegalArgumentException("quantizing to " + type + " is not supported");
        }
    }

    /** Dequantizes {@code n} values from {@code in} at its position (advancing it) into {@code y} from {@code offset}. */
    public static void dequantize(GgmlType type, ByteBuffer in, float[] y, int offset, int n) {
        ByteBuffer b = in.order(ByteOrder.LITTLE_ENDIAN);
        checkWhole(type, n);
        switch (type) {
            case F32 -> {
                for (int i = 0; i < n; i++) {
                    y[offset + i] = b.getFloat();
                }
            }
            case F16 -> {
                for (int i = 0; i < n; i++) {
                    y[offset + i] = Float16.toFloat(b.getShort());
                }
            }
            case BF16 -> {
                for (int i = 0; i < n; i++) {
                    y[offset + i] = Float.intBitsToFloat((b.getShort() & 0xFFFF) << 16);
                }
            }
            case Q8_0 -> {
                for (int k = 0; k < n; k += 32) {
                    float d = Float16.toFloat(b.getShort());
                    for (int j = 0; j < 32; j++) {
                        y[offset + k + j] = b.get() * d;
                    }
                }
            }
            case Q4_0 -> {
                for (int k = 0; k < n; k += 32) {
                    float d = Float16.toFloat(b.getShort());
                    for (int j = 0; j < 16; j++) {
                        int q = b.get() & 0xFF;
                        y[offset + k + j] = ((q & 0x0F) - 8) * d;
                        y[offset + k + j + 16] = ((q >>> 4) - 8) * d;
                    }
                }
            }
            case Q4_K -> {
                for (int k = 0; k < n; k += QK_K) {
                    dequantizeQ4K(b, y, offset + k);
                }
            }
            case Q6_K -> {
                for (int k = 0; k < n; k += QK_K) {
                    dequantizeQ6K(b, y, offset + k);
                }
            }
            default -> throw new IllegalArgumentException("dequantizing " + type + " is not supported");
        }
    }

    private static void checkWhole(GgmlType type, int n) {
        if (n % type.blockSize() != 0) {
            throw new IllegalArgumentException(type + " works in blocks of " + type.blockSize() + " values, not " + n);
        }
    }

    // ---------------------------------------------------------------- Q8_0

    private static void quantizeQ8_0(float[] x, int o, ByteBuffer out) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) {
            amax = Math.max(amax, Math.abs(x[o + j]));
        }
        float d = amax / ((1 << 7) - 1);
        float id = d != 0 ? 1.0f / d : 0.0f;
        out.putShort(Float16.fromFloat(d));
        for (int j = 0; j < 32; j++) {
            out.put((byte) roundf(x[o + j] * id));
        }
    }

    // ---------------------------------------------------------------- Q4_0

    private static void quantizeQ4_0(float[] x, int o, ByteBuffer out) {
        float amax = 0.0f;
        float max = 0.0f;
        for (int j = 0; j < 32; j++) {
            float v = x[o + j];
            if (amax < Math.abs(v)) {
                amax = Math.abs(v);
                max = v;
            }
        }
        float d = max / -8;
        float id = d != 0 ? 1.0f / d : 0.0f;
        out.putShort(Float16.fromFloat(d));
        for (int j = 0; j < 16; j++) {
            float x0 = x[o + j] * id;
            float x1 = x[o + 16 + j] * id;
            int xi0 = Math.min(15, (byte) (int) (x0 + 8.5f));
            int xi1 = Math.min(15, (byte) (int) (x1 + 8.5f));
            out.put((byte) (xi0 | (xi1 << 4)));
        }
    }

    // ---------------------------------------------------------------- Q4_K

    private static void quantizeQ4K(float[] x, int o, ByteBuffer out) {
        int[] l = new int[QK_K];
        int[] laux = new int[32];
        float[] weights = new float[32];
        float[] mins = new float[QK_K / 32];
        float[] scales = new float[QK_K / 32];
        float maxScale = 0;
        float maxMin = 0;
        for (int j = 0; j < QK_K / 32; j++) {
            float sumX2 = 0;
            for (int i = 0; i < 32; i++) {
                sumX2 += x[o + 32 * j + i] * x[o + 32 * j + i];
            }
            float avX = (float) Math.sqrt(sumX2 / 32);
            for (int i = 0; i < 32; i++) {
                weights[i] = avX + Math.abs(x[o + 32 * j + i]);
            }
            float[] min = new float[1];
            scales[j] = makeQkx2Quants(32, 15, x, o + 32 * j, weights, l, 32 * j, min, laux, -1.f, 0.1f, 20);
            mins[j] = min[0];
            maxScale = Math.max(maxScale, scales[j]);
            maxMin = Math.max(maxMin, mins[j]);
        }
        float invScale = maxScale > 0 ? 63.f / maxScale : 0.f;
        float invMin = maxMin > 0 ? 63.f / maxMin : 0.f;
        byte[] packed = new byte[12];
        for (int j = 0; j < QK_K / 32; j++) {
            int ls = Math.min(63, nearestInt(invScale * scales[j]) & 0xFF);
            int lm = Math.min(63, nearestInt(invMin * mins[j]) & 0xFF);
            if (j < 4) {
                packed[j] = (byte) ls;
                packed[j + 4] = (byte) lm;
            } else {
                packed[j + 4] = (byte) ((ls & 0xF) | ((lm & 0xF) << 4));
                packed[j - 4] |= (byte) ((ls >> 4) << 6);
                packed[j] |= (byte) ((lm >> 4) << 6);
            }
        }
        short dHalf = Float16.fromFloat(maxScale / 63.f);
        short dminHalf = Float16.fromFloat(maxMin / 63.f);
        float dAll = Float16.toFloat(dHalf);
        float dminAll = Float16.toFloat(dminHalf);
        for (int j = 0; j < QK_K / 32; j++) {
            int[] sm = scaleMinK4(j, packed);
            float d = dAll * sm[0];
            if (d == 0) {
                continue;
            }
            float dm = dminAll * sm[1];
            for (int ii = 0; ii < 32; ii++) {
                int q = nearestInt((x[o + 32 * j + ii] + dm) / d);
                l[32 * j + ii] = Math.max(0, Math.min(15, q));
            }
        }
        out.putShort(dHalf).putShort(dminHalf).put(packed);
        for (int j = 0; j < QK_K; j += 64) {
            for (int i = 0; i < 32; i++) {
                out.put((byte) (l[j + i] | (l[j + i + 32] << 4)));
            }
        }
    }

    private static void dequantizeQ4K(ByteBuffer b, float[] y, int o) {
        float d = Float16.toFloat(b.getShort());
        float min = Float16.toFloat(b.getShort());
        byte[] scales = new byte[12];
        b.get(scales);
        int q = b.position();
        int is = 0;
        for (int j = 0; j < QK_K; j += 64) {
            int[] sm = scaleMinK4(is, scales);
            float d1 = d * sm[0];
            float m1 = min * sm[1];
            sm = scaleMinK4(is + 1, scales);
            float d2 = d * sm[0];
            float m2 = min * sm[1];
            for (int l = 0; l < 32; l++) {
                y[o + j + l] = d1 * (b.get(q + l) & 0xF) - m1;
            }
            for (int l = 0; l < 32; l++) {
                y[o + j + 32 + l] = d2 * ((b.get(q + l) & 0xFF) >>> 4) - m2;
            }
            q += 32;
            is += 2;
        }
        b.position(q);
    }

    /**
     * The 6-bit scale and min of sub-block {@code j} (0-7) of a Q4_K block's 12 packed bytes ({@code get_scale_min_k4}):
     * sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins); 4-7 in the nibbles of bytes 8-11 with
     * their top 2 bits in the top bits of bytes 0-7.
     */
    public static int[] scaleMinK4(int j, byte[] q) {
        if (j < 4) {
            return new int[]{q[j] & 63, q[j + 4] & 63};
        }
        int sc = (q[j + 4] & 0xF) | (((q[j - 4] & 0xFF) >> 6) << 4);
        int m = ((q[j + 4] & 0xFF) >> 4) | (((q[j] & 0xFF) >> 6) << 4);
        return new int[]{sc, m};
    }

    private static float makeQkx2Quants(int n, int nmax, float[] x, int xo, float[] weights, int[] l, int lo,
                                        float[] theMin, int[] laux, float rmin, float rdelta, int nstep) {
        float min = x[xo];
        float max = x[xo];
        float sumW = weights[0];
        float sumX = sumW * x[xo];
        for (int i = 1; i < n; i++) {
            if (x[xo + i] < min) {
                min = x[xo + i];
            }
            if (x[xo + i] > max) {
                max = x[xo + i];
            }
            float w = weights[i];
            sumW += w;
            sumX += w * x[xo + i];
        }
        if (min > 0) {
            min = 0;
        }
        if (max == min) {
            for (int i = 0; i < n; i++) {
                l[lo + i] = 0;
            }
            theMin[0] = -min;
            return 0.f;
        }
        float iscale = nmax / (max - min);
        float scale = 1 / iscale;
        float bestError = 0;
        for (int i = 0; i < n; i++) {
            int q = nearestInt(iscale * (x[xo + i] - min));
            l[lo + i] = Math.max(0, Math.min(nmax, q));
            float diff = scale * l[lo + i] + min - x[xo + i];
            diff = diff * diff;
            bestError += weights[i] * diff;
        }
        if (nstep < 1) {
            theMin[0] = -min;
            return scale;
        }
        for (int is = 0; is <= nstep; is++) {
            iscale = (rmin + rdelta * is + nmax) / (max - min);
            float sumL = 0;
            float sumL2 = 0;
            float sumXl = 0;
            for (int i = 0; i < n; i++) {
                int q = nearestInt(iscale * (x[xo + i] - min));
                q = Math.max(0, Math.min(nmax, q));
                laux[i] = q;
                float w = weights[i];
                sumL += w * q;
                sumL2 += w * q * q;
                sumXl += w * q * x[xo + i];
            }
            float det = sumW * sumL2 - sumL * sumL;
            if (det > 0) {
                float thisScale = (sumW * sumXl - sumX * sumL) / det;
                float thisMin = (sumL2 * sumX - sumL * sumXl) / det;
                if (thisMin > 0) {
                    thisMin = 0;
                    thisScale = sumXl / sumL2;
                }
                float curError = 0;
                for (int i = 0; i < n; i++) {
                    float diff = thisScale * laux[i] + thisMin - x[xo + i];
                    diff = diff * diff;
                    curError += weights[i] * diff;
                }
                if (curError < bestError) {
                    System.arraycopy(laux, 0, l, lo, n);
                    bestError = curError;
                    scale = thisScale;
                    min = thisMin;
                }
            }
        }
        theMin[0] = -min;
        return scale;
    }

    // ---------------------------------------------------------------- Q6_K

    private static void quantizeQ6K(float[] x, int o, ByteBuffer out) {
        int[] l = new int[QK_K];
        float[] scales = new float[QK_K / 16];
        float maxScale = 0;
        float maxAbsScale = 0;
        for (int ib = 0; ib < QK_K / 16; ib++) {
            float scale = makeQxQuantsRmse1(16, 32, x, o + 16 * ib, l, 16 * ib);
            scales[ib] = scale;
            float absScale = Math.abs(scale);
            if (absScale > maxAbsScale) {
                maxAbsScale = absScale;
                maxScale = scale;
            }
        }
        if (maxAbsScale < GROUP_MAX_EPS) {
            out.put(new byte[GgmlType.Q6_K.blockBytes()]); // every field zero, d included
            return;
        }
        float iscale = -128.f / maxScale;
        short dHalf = Float16.fromFloat(1 / iscale);
        byte[] sc = new byte[QK_K / 16];
        for (int ib = 0; ib < QK_K / 16; ib++) {
            sc[ib] = (byte) Math.min(127, nearestInt(iscale * scales[ib]));
        }
        float dAll = Float16.toFloat(dHalf);
        for (int j = 0; j < QK_K / 16; j++) {
            float d = dAll * sc[j];
            if (d == 0) {
                continue;
            }
            for (int ii = 0; ii < 16; ii++) {
                int q = nearestInt(x[o + 16 * j + ii] / d);
                q = Math.max(-32, Math.min(31, q));
                l[16 * j + ii] = q + 32;
            }
        }
        byte[] ql = new byte[QK_K / 2];
        byte[] qh = new byte[QK_K / 4];
        for (int j = 0, qlo = 0, qho = 0; j < QK_K; j += 128, qlo += 64, qho += 32) {
            for (int i = 0; i < 32; i++) {
                int q1 = l[j + i] & 0xF;
                int q2 = l[j + i + 32] & 0xF;
                int q3 = l[j + i + 64] & 0xF;
                int q4 = l[j + i + 96] & 0xF;
                ql[qlo + i] = (byte) (q1 | (q3 << 4));
                ql[qlo + i + 32] = (byte) (q2 | (q4 << 4));
                qh[qho + i] = (byte) ((l[j + i] >> 4) | ((l[j + i + 32] >> 4) << 2) | ((l[j + i + 64] >> 4) << 4)
                        | ((l[j + i + 96] >> 4) << 6));
            }
        }
        out.put(ql).put(qh).put(sc).putShort(dHalf);
    }

    /** {@code make_qx_quants} with {@code rmse_type} 1 and no importance weights (weights x^2), as Q6_K uses it. */
    private static float makeQxQuantsRmse1(int n, int nmax, float[] x, int xo, int[] l, int lo) {
        float max = 0;
        float amax = 0;
        for (int i = 0; i < n; i++) {
            float ax = Math.abs(x[xo + i]);
            if (ax > amax) {
                amax = ax;
                max = x[xo + i];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            for (int i = 0; i < n; i++) {
                l[lo + i] = 0;
            }
            return 0.f;
        }
        float iscale = -nmax / max;
        float sumlx = 0;
        float suml2 = 0;
        for (int i = 0; i < n; i++) {
            int q = nearestInt(iscale * x[xo + i]);
            q = Math.max(-nmax, Math.min(nmax - 1, q));
            l[lo + i] = q + nmax;
            float w = x[xo + i] * x[xo + i];
            sumlx += w * x[xo + i] * q;
            suml2 += w * q * q;
        }
        float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
        float best = scale * sumlx;
        for (int is = -9; is <= 9; is++) {
            if (is == 0) {
                continue;
            }
            iscale = -(nmax + 0.1f * is) / max;
            sumlx = 0;
            suml2 = 0;
            for (int i = 0; i < n; i++) {
                int q = nearestInt(iscale * x[xo + i]);
                q = Math.max(-nmax, Math.min(nmax - 1, q));
                float w = x[xo + i] * x[xo + i];
                sumlx += w * x[xo + i] * q;
                suml2 += w * q * q;
            }
            if (suml2 > 0 && sumlx * sumlx > best * suml2) {
                for (int i = 0; i < n; i++) {
                    int q = nearestInt(iscale * x[xo + i]);
                    l[lo + i] = nmax + Math.max(-nmax, Math.min(nmax - 1, q));
                }
                scale = sumlx / suml2;
                best = scale * sumlx;
            }
        }
        return scale;
    }

    private static void dequantizeQ6K(ByteBuffer b, float[] y, int o) {
        int base = b.position();
        int qlBase = base;
        int qhBase = base + QK_K / 2;
        int scBase = qhBase + QK_K / 4;
        float d = Float16.toFloat(b.getShort(scBase + QK_K / 16));
        for (int n = 0; n < QK_K; n += 128) {
            int ql = qlBase + n / 2;
            int qh = qhBase + n / 4;
            int sc = scBase + n / 16;
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int h = b.get(qh + l) & 0xFF;
                int q1 = ((b.get(ql + l) & 0xF) | ((h & 3) << 4)) - 32;
                int q2 = ((b.get(ql + l + 32) & 0xF) | (((h >> 2) & 3) << 4)) - 32;
                int q3 = (((b.get(ql + l) & 0xFF) >> 4) | (((h >> 4) & 3) << 4)) - 32;
                int q4 = (((b.get(ql + l + 32) & 0xFF) >> 4) | (((h >> 6) & 3) << 4)) - 32;
                y[o + n + l] = d * b.get(sc + is) * q1;
                y[o + n + l + 32] = d * b.get(sc + is + 2) * q2;
                y[o + n + l + 64] = d * b.get(sc + is + 4) * q3;
                y[o + n + l + 96] = d * b.get(sc + is + 6) * q4;
            }
        }
        b.position(base + GgmlType.Q6_K.blockBytes());
    }

    // ---------------------------------------------------------------- C's rounding

    /** ggml's {@code nearest_int}: round to nearest, ties to even, by the float trick it uses (|v| <= 4194303). */
    static int nearestInt(float v) {
        float val = v + 12582912.f;
        return (Float.floatToRawIntBits(val) & 0x007fffff) - 0x00400000;
    }

    /** C's {@code roundf}: to nearest, ties away from zero. */
    static float roundf(float v) {
        float r = (float) Math.floor(Math.abs(v) + 0.5);
        return Math.copySign(r, v);
    }
}
