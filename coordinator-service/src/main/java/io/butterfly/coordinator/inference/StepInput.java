package io.butterfly.coordinator.inference;

/**
 * One step of a task's sequence: its new tokens, at {@code position} of the sequence.
 *
 * @param step             0 for the prefill of the whole prompt, then one per generated token
 * @param epoch            the assignment the task runs on: a stage of another epoch refuses the step
 * @param reservePositions the positions every stage sizes the sequence's KV cache for at its first step
 */
public record StepInput(String taskId, int step, long epoch, int position, long[] tokens, int reservePositions) {
}
