package io.butterfly.coordinator.jobs;

/**
 * A client's RESULT as kept (docs/jobs.md).
 *
 * @param step         the step it names
 * @param position     the dataset position it names
 * @param data         its bytes, as sent
 * @param receivedAtMs when it arrived
 */
public record StoredResult(long step, long position, byte[] data, long receivedAtMs) {
}
