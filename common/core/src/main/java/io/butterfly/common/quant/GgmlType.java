package io.butterfly.common.quant;

import java.util.Arrays;
import java.util.Optional;

/**
 * Tensor types of ggml (GGUF's {@code ggml_type}), with the layout of their blocks: a row of {@code n} values is
 * {@code n / blockSize} blocks of {@code blockBytes} each. Butterfly computes with the {@link #supported() supported}
 * ones; the others are listed so that a refusal can name what a file holds.
 */
public enum GgmlType {

    F32(0, 1, 4, true),
    F16(1, 1, 2, true),
    Q4_0(2, 32, 18, true),
    Q4_1(3, 32, 20, false),
    Q5_0(6, 32, 22, false),
    Q5_1(7, 32, 24, false),
    Q8_0(8, 32, 34, true),
    Q8_1(9, 32, 36, false),
    Q2_K(10, 256, 84, false),
    Q3_K(11, 256, 110, false),
    Q4_K(12, 256, 144, true),
    Q5_K(13, 256, 176, false),
    Q6_K(14, 256, 210, true),
    Q8_K(15, 256, 292, false),
    IQ2_XXS(16, 256, 66, false),
    IQ2_XS(17, 256, 74, false),
    IQ3_XXS(18, 256, 98, false),
    IQ1_S(19, 256, 50, false),
    IQ4_NL(20, 32, 18, false),
    IQ3_S(21, 256, 110, false),
    IQ2_S(22, 256, 82, false),
    IQ4_XS(23, 256, 136, false),
    I8(24, 1, 1, false),
    I16(25, 1, 2, false),
    I32(26, 1, 4, false),
    I64(27, 1, 8, false),
    F64(28, 1, 8, false),
    IQ1_M(29, 256, 56, false),
    BF16(30, 1, 2, true),
    TQ1_0(34, 256, 54, false),
    TQ2_0(35, 256, 66, false),
    MXFP4(39, 32, 17, false);

    private final int id;
    private final int blockSize;
    private final int blockBytes;
    private final boolean supported;

    GgmlType(int id, int blockSize, int blockBytes, boolean supported) {
        this.id = id;
        this.blockSize = blockSize;
        this.blockBytes = blockBytes;
        this.supported = supported;
    }

    /** The type's number in GGUF files. */
    public int id() {
        return id;
    }

    /** Values per block. */
    public int blockSize() {
        return blockSize;
    }

    /** Bytes per block. */
    public int blockBytes() {
        return blockBytes;
    }

    /** Whether Butterfly's workers compute with tensors of this type. */
    public boolean supported() {
        return supported;
    }

    /** Whether values are stored in blocks with scales (a quantized type) rather than one by one. */
    public boolean quantized() {
        return blockSize > 1;
    }

    /** Bytes of a row of {@code values} values; fails unless they fill whole blocks. */
    public long rowBytes(long values) {
        if (values % blockSize != 0) {
            throw new IllegalArgumentException(this + " stores rows in blocks of " + blockSize + " values; a row of "
                    + values + " is not a whole number of them");
        }
        return values / blockSize * blockBytes;
    }

    /** Bytes per value, on average (4 for F32, 1.0625 for Q8_0, 0.5625 for Q4_0). */
    public double bytesPerValue() {
        return (double) blockBytes / blockSize;
    }

    /** The type with GGUF number {@code id}, if ggml has one. */
    public static Optional<GgmlType> byId(long id) {
        return Arrays.stream(values()).filter(t -> t.id == id).findFirst();
    }

    /** The type named {@code name} (as ggml spells it, e.g. "Q4_K"), if any. */
    public static Optional<GgmlType> byName(String name) {
        return Arrays.stream(values()).filter(t -> t.name().equalsIgnoreCase(name)).findFirst();
    }
}
