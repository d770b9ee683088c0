package io.butterfly.common.error;

import java.time.Duration;

/**
 * How often a call is tried and how long is waited between tries: what a service's configuration says of each of
 * its retried calls (the waiting itself is Resilience4j's Retry, built by {@code io.butterfly.common.retry.Retries}).
 *
 * @param maxAttempts tries in all, the first included; 0: until the call succeeds or is refused for good
 * @param firstWait   the wait before the first retry; doubles per retry
 * @param maxWait     the cap on a wait (before jitter)
 */
public record RetrySettings(int maxAttempts, Duration firstWait, Duration maxWait) {

    public RetrySettings {
        if (maxAttempts < 0) {
            throw new IllegalArgumentException("maxAttempts is 0 (unbounded) or more: " + maxAttempts);
        }
        if (firstWait == null || maxWait == null || firstWait.isNegative() || maxWait.isNegative()) {
            throw new IllegalArgumentException("a retry's waits are set and not negative: " + firstWait + ", " + maxWait);
        }
    }

    /** Whether the tries are bounded only by success or a refusal that is not retried. */
    public boolean unbounded() {
        return maxAttempts == 0;
    }

    /** The waits, spread by {@code jitter}. */
    public Backoff backoff(Backoff.Jitter jitter) {
        return new Backoff(firstWait, maxWait, jitter);
    }
}
