package io.butterfly.worker.engine;

import java.nio.ByteBuffer;

/** What a stage consumes: token ids (the stage holding the embedding) or hidden states from the previous stage. */
public sealed interface StageInput {

    /** Token ids of all sequences of the batch, concatenated in batch order. */
    record Tokens(long[] ids) implements StageInput {
    }

    /** Hidden states {@code [totalTokens, hidden]} as little-endian float32, rows in batch order. */
    record Hidden(ByteBuffer littleEndianFloats) implements StageInput {
    }
}
