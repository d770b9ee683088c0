package io.butterfly.common.quant;

import io.butterfly.common.safetensors.FloatWidening;

/**
 * IEEE 754 binary16 conversions as ggml makes them ({@code GGML_FP32_TO_FP16}: round to nearest, ties to even, as the
 * F16C instruction {@code vcvtps2ph} with rounding mode 0 does). {@code Float.floatToFloat16} needs Java 20.
 */
public final class Float16 {

    private Float16() {
    }

    /** The half-precision value's float32 (exact). */
    public static float toFloat(short half) {
        return FloatWidening.halfToFloat(half);
    }

    /** The nearest half-precision value (ties to even); overflow gives infinity, NaN stays NaN. */
    public static short fromFloat(float value) {
        int bits = Float.floatToRawIntBits(value);
        int sign = (bits >>> 16) & 0x8000;
        int exp = (bits >>> 23) & 0xFF;
        int mant = bits & 0x7FFFFF;
        if (exp == 0xFF) {
            return (short) (sign | 0x7C00 | (mant != 0 ? 0x200 | (mant >>> 13) : 0));
        }
        int e = exp - 127 + 15; // the half's biased exponent
        if (e >= 0x1F) {
            return (short) (sign | 0x7C00);
        }
        if (e <= 0) {
            if (e < -10) {
                return (short) sign; // below half the smallest subnormal: rounds to zero
            }
            // Subnormal: the implicit bit joins the mantissa, shifted right by 1 - e more places.
            int m = mant | 0x800000;
            int shift = 14 - e;
            int half = m >>> shift;
            int rest = m & ((1 << shift) - 1);
            int midpoint = 1 << (shift - 1);
            if (rest > midpoint || (rest == midpoint && (half & 1) != 0)) {
                half++;
            }
            return (short) (sign | half);
        }
        int half = (e << 10) | (mant >>> 13);
        int rest = mant & 0x1FFF;
        if (rest > 0x1000 || (rest == 0x1000 && (half & 1) != 0)) {
            half++; // a carry into the exponent is the right result, up to infinity
        }
        return (short) (sign | half);
    }
}
