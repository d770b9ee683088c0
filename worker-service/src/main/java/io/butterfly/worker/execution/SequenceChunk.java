package io.butterfly.worker.execution;

import java.util.Objects;

/**
 * One sequence's share of a packed batch.
 *
 * @param sequenceId identifies the sequence's KV cache
 * @param position   tokens already cached for this sequence (the absolute position of the first new token)
 * @param numTokens  new tokens of this sequence in the batch (many for prefill, one for decode)
 */
public record SequenceChunk(String sequenceId, int position, int numTokens) {

    public SequenceChunk {
        Objects.requireNonNull(sequenceId, "sequenceId");
        if (position < 0 || numTokens <= 0) {
            throw new IllegalArgumentException("sequence '" + sequenceId + "' needs position >= 0 and numTokens > 0, got "
                    + position + " and " + numTokens);
        }
    }
}
