package io.butterfly.common.error;

import java.time.Duration;
import java.util.EnumSet;
import java.util.Set;
import java.util.random.RandomGenerator;

/**
 * Which refusals a client retries and how long it waits (docs/bootstrap-protocol.md §8.2): transient and
 * resource errors are retried with exponential backoff plus jitter ({@link Backoff}); protocol and semantic errors are
 * not.
 *
 * @param baseMillis first delay when the server suggests none
 * @param maxMillis  cap on the backoff (before jitter)
 */
public record RetryPolicy(long baseMillis, long maxMillis) {

    private static final Set<ErrorCode> RETRYABLE = EnumSet.of(ErrorCode.TIMEOUT, ErrorCode.NO_PEERS_AVAILABLE,
            ErrorCode.JOIN_RATE_LIMITED, ErrorCode.CLUSTER_FULL);

    /** Context key under which a server suggests the earliest retry (milliseconds). */
    public static final String RETRY_AFTER_MS = "retry_after_ms";

    public static boolean retryable(ErrorCode code) {
        return RETRYABLE.contains(code);
    }

    /**
     * Delay before retry number {@code attempt} (0-based): base (or the server's retry_after) times
     * 2^min(attempt, 5), capped, plus up to half of that again as jitter so clients spread out.
     */
    public long delayMillis(int attempt, long retryAfterMillis, RandomGenerator random) {
        long base = retryAfterMillis > 0 ? retryAfterMillis : baseMillis;
        return new Backoff(Duration.ofMillis(base), Duration.ofMillis(maxMillis), Backoff.Jitter.ADD_HALF)
                .millis(Math.min(attempt, 5), random);
    }
}
