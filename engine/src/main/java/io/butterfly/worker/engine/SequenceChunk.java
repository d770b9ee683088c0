package io.butterfly.worker.engine;

import java.util.Objects;

/**
 * One sequence's share of a packed batch.
 *
 * @param sequenceId       identifies the sequence's KV cache
 * @param position         tokens already cached for this sequence (the absolute position of the first new token)
 * @param numTokens        new tokens of this sequence in the batch (many for prefill, one for decode)
 * @param reservePositions positions the sequence may reach, counted against the cache budget from its first step
 *                         (0 = unknown: only what its cache takes is counted)
 * @param skipLogits       nothing is sampled from this step for the sequence (a prompt chunk before its last, a
 *                         replayed token): the head computes no row for it, which on a resume's replay saves the
 *                         largest matrix of the model once per replayed token
 */
public record SequenceChunk(String sequenceId, int position, int numTokens, int reservePositions,
                            boolean skipLogits) {

    public SequenceChunk {
        Objects.requireNonNull(sequenceId, "sequenceId");
        if (position < 0 || numTokens <= 0 || reservePositions < 0) {
            throw new IllegalArgumentException("sequence '" + sequenceId + "' needs position >= 0, numTokens > 0 and"
                    + " reservePositions >= 0, got " + position + ", " + numTokens + " and " + reservePositions);
        }
    }

    /** A chunk whose logits are wanted. */
    public SequenceChunk(String sequenceId, int position, int numTokens, int reservePositions) {
        this(sequenceId, position, numTokens, reservePositions, false);
    }

    /** A chunk of a sequence whose final length is not known. */
    public SequenceChunk(String sequenceId, int position, int numTokens) {
        this(sequenceId, position, numTokens, 0);
    }
}
