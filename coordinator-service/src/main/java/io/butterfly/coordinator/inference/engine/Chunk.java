package io.butterfly.coordinator.inference.engine;

/**
 * One sequence's part of a micro-batch: {@code numTokens} new positions from {@code position}.
 *
 * @param samples whether the step ends the known tokens (the prompt, or a replayed history) or decodes, so a token is
 *                chosen from its logits (a chunk before that only fills the KV caches)
 * @param attempt the sequence's attempt the step belongs to ({@link Sequence#attempt()})
 */
public record Chunk(Sequence sequence, int position, int numTokens, boolean samples, int attempt) {
}
