package io.butterfly.common.gguf;

import java.util.List;
import java.util.Objects;

/**
 * A metadata value with its GGUF type. Scalars hold a {@link Long} (integers, unsigned ones widened), {@link Double}
 * (floats), {@link Boolean} or {@link String}; an array holds its element type and a list of such scalars.
 *
 * @param type        the value's type
 * @param elementType for an array, its elements' type; otherwise null
 * @param value       the scalar, or the list of an array's elements
 */
public record GgufValue(GgufValueType type, GgufValueType elementType, Object value) {

    public GgufValue {
        Objects.requireNonNull(type, "type");
        Objects.requireNonNull(value, "value");
        if ((type == GgufValueType.ARRAY) != (elementType != null)) {
            throw new IllegalArgumentException("an array, and only an array, has an element type");
        }
    }

    public static GgufValue of(GgufValueType type, Object scalar) {
        return new GgufValue(type, null, scalar);
    }

    public static GgufValue string(String s) {
        return of(GgufValueType.STRING, s);
    }

    public static GgufValue uint32(long v) {
        return of(GgufValueType.UINT32, v);
    }

    public static GgufValue float32(double v) {
        return of(GgufValueType.FLOAT32, v);
    }

    public static GgufValue bool(boolean v) {
        return of(GgufValueType.BOOL, v);
    }

    public static GgufValue array(GgufValueType elementType, List<?> elements) {
        return new GgufValue(GgufValueType.ARRAY, elementType, List.copyOf(elements));
    }

    /** The elements of an array. */
    public List<?> elements() {
        if (type != GgufValueType.ARRAY) {
            throw new IllegalStateException("a " + type + " is not an array");
        }
        return (List<?>) value;
    }
}
