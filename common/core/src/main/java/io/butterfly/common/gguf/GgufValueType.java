package io.butterfly.common.gguf;

import java.util.Arrays;
import java.util.Optional;

/** The types of GGUF metadata values ({@code gguf_metadata_value_type}), with their numbers in the file. */
public enum GgufValueType {
    UINT8(0, 1),
    INT8(1, 1),
    UINT16(2, 2),
    INT16(3, 2),
    UINT32(4, 4),
    INT32(5, 4),
    FLOAT32(6, 4),
    BOOL(7, 1),
    STRING(8, -1),
    ARRAY(9, -1),
    UINT64(10, 8),
    INT64(11, 8),
    FLOAT64(12, 8);

    private final int id;
    private final int size;

    GgufValueType(int id, int size) {
        this.id = id;
        this.size = size;
    }

    public int id() {
        return id;
    }

    /** Bytes of one value, or -1 for strings and arrays (sized in the file). */
    int size() {
        return size;
    }

    static Optional<GgufValueType> byId(long id) {
        return Arrays.stream(values()).filter(t -> t.id == id).findFirst();
    }
}
