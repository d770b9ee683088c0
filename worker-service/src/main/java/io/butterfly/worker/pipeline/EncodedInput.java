package io.butterfly.worker.pipeline;

import java.nio.ByteBuffer;

/**
 * A step's input as it arrived: decoded, and checked against its declared dtype, shape and hash, only when the stage
 * asks for it. Failures are INVALID_MESSAGE ButterflyExceptions naming {@code what}.
 */
public interface EncodedInput {

    /** Token ids: int64, rank 1. */
    long[] tokenIds(String what);

    /** Hidden states: float32, rank 2, the received bytes wrapped rather than copied. */
    Hidden hiddenStates(String what);

    /** Hidden states {@code [rows, cols]} as little-endian float32. */
    record Hidden(ByteBuffer littleEndianFloats, long rows, long cols) {
    }
}
