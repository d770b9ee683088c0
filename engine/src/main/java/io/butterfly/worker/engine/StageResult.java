package io.butterfly.worker.engine;

import java.nio.ByteBuffer;

/**
 * What a stage produces: hidden states {@code [totalTokens, hidden]}, or, on the stage holding the head,
 * logits {@code [sequences, vocab]} at the last position of each sequence that does not skip them, in batch order.
 *
 * @param littleEndianFloats float32 values, little-endian, row-major
 * @param shape              dimensions of the values
 * @param logits             whether these are logits (last stage) rather than hidden states
 */
public record StageResult(ByteBuffer littleEndianFloats, long[] shape, boolean logits) {

    /** The values as a float array (copies). */
    public float[] toFloats() {
        float[] out = new float[littleEndianFloats.remaining() / Float.BYTES];
        littleEndianFloats.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(out);
        return out;
    }
}
