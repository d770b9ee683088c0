package io.butterfly.coordinator.inference.engine;

import java.util.List;

/**
 * Sequences that take one pipeline step together; no sequence is in two micro-batches at once (its next tokens
 * depend on this step's).
 *
 * @param id     this replica's number for it (steps are matched to their outcomes by it)
 * @param chunks in batch order: the last stage's logits come back in this order
 */
public record MicroBatch(long id, List<Chunk> chunks) {

    public MicroBatch {
        chunks = List.copyOf(chunks);
    }

    public int tokens() {
        return chunks.stream().mapToInt(Chunk::numTokens).sum();
    }
}
