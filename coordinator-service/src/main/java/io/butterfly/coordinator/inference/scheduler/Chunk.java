package io.butterfly.coordinator.inference.scheduler;

/**
 * One sequence's part of a micro-batch: {@code numTokens} new positions from {@code position}.
 *
 * @param samples whether the step ends the sequence's prompt or decodes, so a token is chosen from its logits (a
 *                chunk inside the prompt only fills the KV caches)
 */
public record Chunk(SequenceProgress sequence, int position, int numTokens, boolean samples) {
}
