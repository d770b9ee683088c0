package io.butterfly.coordinator.reconcile;

/**
 * What became of one action's attempts while this replica leads (times in Unix epoch milliseconds, 0 = never).
 *
 * @param failures      failed attempts since the last success
 * @param lastAttemptMs when the last attempt ended
 * @param lastSuccessMs when an attempt last succeeded
 */
public record Attempts(int failures, long lastAttemptMs, long lastSuccessMs) {

    public static final Attempts NONE = new Attempts(0, 0, 0);

    public boolean succeeded() {
        return lastSuccessMs > 0;
    }

    Attempts failed(long atMs) {
        return new Attempts(failures + 1, atMs, lastSuccessMs);
    }

    Attempts succeeded(long atMs) {
        return new Attempts(0, atMs, atMs);
    }
}
