package io.butterfly.common.verify;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import java.util.List;
import java.util.Objects;

/**
 * What a step's sender declares of the tensor it sends (the spec's {@code tensor_metadata}): element type, shape and
 * byte layout. A stage checks the declaration against what it expects before it reads a byte, and the tensor against
 * the declaration.
 *
 * @param dtype  the wire dtype's name ({@code INT64}, {@code FLOAT32})
 * @param layout how elements lie in the bytes: {@link #ROW_MAJOR_LE}, the only layout Butterfly sends
 */
public record TensorMetadata(String dtype, List<Long> shape, String layout) {

    /** Little-endian elements, the last dimension contiguous. */
    public static final String ROW_MAJOR_LE = "row-major-le";

    public TensorMetadata {
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(layout, "layout");
        shape = List.copyOf(shape);
    }

    public static TensorMetadata of(String dtype, long... shape) {
        return new TensorMetadata(dtype, java.util.Arrays.stream(shape).boxed().toList(), ROW_MAJOR_LE);
    }

    /**
     * Refuses a declaration other than {@code expected}: CONTRACT_MISMATCH, INVALID_ARGUMENT.
     *
     * @param what the tensor, for the message ("input hidden states")
     */
    public void requireEqual(TensorMetadata expected, String what) {
        if (!equals(expected)) {
            throw new ButterflyException(ErrorCode.CONTRACT_MISMATCH, ErrorKind.INVALID_ARGUMENT,
                    what + " are declared " + this + " but this stage expects " + expected);
        }
    }

    @Override
    public String toString() {
        return dtype + shape + " " + layout;
    }
}
