package io.butterfly.common.safetensors;

import java.util.Arrays;

/**
 * One entry of a safetensors header.
 *
 * @param name  tensor name
 * @param dtype safetensors dtype string ("F32", "F16", "BF16", "I64", ...)
 * @param shape dimensions
 * @param begin first byte, relative to the data section
 * @param end   one past the last byte, relative to the data section
 */
public record TensorInfo(String name, String dtype, long[] shape, long begin, long end) {

    public long numElements() {
        return Arrays.stream(shape).reduce(1L, Math::multiplyExact);
    }

    public long byteLength() {
        return end - begin;
    }

    /** Bytes per element of a safetensors dtype. */
    public static int elementSize(String dtype) {
        return switch (dtype) {
            case "F64", "I64", "U64" -> 8;
            case "F32", "I32", "U32" -> 4;
            case "F16", "BF16", "I16", "U16" -> 2;
            case "I8", "U8", "BOOL", "F8_E4M3", "F8_E5M2" -> 1;
            default -> throw new IllegalArgumentException("unknown safetensors dtype '" + dtype + "'");
        };
    }

    @Override
    public String toString() {
        return name + " " + dtype + Arrays.toString(shape);
    }
}
