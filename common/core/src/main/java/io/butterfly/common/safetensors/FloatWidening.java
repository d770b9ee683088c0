package io.butterfly.common.safetensors;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Exact widening of half-precision encodings to float32. */
public final class FloatWidening {

    private FloatWidening() {
    }

    public static float[] toFloat32(String dtype, ByteBuffer littleEndian) {
        ByteBuffer b = littleEndian.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        return switch (dtype) {
            case "F32" -> {
                float[] out = new float[b.remaining() / 4];
                b.asFloatBuffer().get(out);
                yield out;
            }
            case "F16" -> {
                float[] out = new float[b.remaining() / 2];
                for (int i = 0; i < out.length; i++) {
                    out[i] = halfToFloat(b.getShort());
                }
                yield out;
            }
            case "BF16" -> {
                float[] out = new float[b.remaining() / 2];
                for (int i = 0; i < out.length; i++) {
                    // bfloat16 is the upper half of a float32.
                    out[i] = Float.intBitsToFloat((b.getShort() & 0xFFFF) << 16);
                }
                yield out;
            }
            default -> throw new IllegalArgumentException("cannot widen " + dtype + " to F32");
        };
    }

    /** IEEE 754 binary16 to float32 (exact; Float.float16ToFloat needs Java 20). */
    public static float halfToFloat(short half) {
        int h = half & 0xFFFF;
        int sign = (h & 0x8000) << 16;
        int exp = (h >>> 10) & 0x1F;
        int mant = h & 0x3FF;
        if (exp == 0x1F) {
            return Float.intBitsToFloat(sign | 0x7F800000 | (mant << 13));
        }
        if (exp == 0) {
            if (mant == 0) {
                return Float.intBitsToFloat(sign);
            }
            // Subnormal half: value = mant * 2^-24, exact in float32.
            float v = mant * 0x1p-24f;
            return sign == 0 ? v : -v;
        }
        return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
    }
}
