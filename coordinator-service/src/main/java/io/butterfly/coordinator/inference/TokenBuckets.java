package io.butterfly.coordinator.inference;

import java.util.HashMap;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * Tokens per minute per API key: each key's bucket holds up to a minute's tokens and refills continuously. A request
 * is admitted while its key's bucket is not empty, and its tokens are charged as they are spent (its prompt when it is
 * admitted, what it generated when it ends), so the bucket may go below zero: the key then waits until it refills,
 * and is told how long ({@code Retry-After}). Requests without a key are not limited here. Thread-safe.
 */
public final class TokenBuckets {

    private static final long MINUTE_NANOS = 60_000_000_000L;

    private final long perMinute;
    private final LongSupplier nanos;
    private final Map<String, Bucket> buckets = new HashMap<>();

    /** @param perMinute tokens a key may spend a minute; 0: no limit */
    public TokenBuckets(long perMinute, LongSupplier nanos) {
        if (perMinute < 0) {
            throw new IllegalArgumentException("tokens-per-minute-per-key must not be negative: " + perMinute);
        }
        this.perMinute = perMinute;
        this.nanos = nanos;
    }

    public boolean limits() {
        return perMinute > 0;
    }

    public long perMinute() {
        return perMinute;
    }

    /**
     * Admits a request of {@code key} spending {@code tokens} now: 0 when admitted (they are charged), or the whole
     * seconds until the key's bucket holds tokens again (nothing charged).
     */
    public synchronized long admit(String key, long tokens) {
        if (!limits()) {
            return 0;
        }
        Bucket b = refilled(key);
        if (b.tokens <= 0) {
            return secondsUntilPositive(b);
        }
        b.tokens -= tokens;
        return 0;
    }

    /** Charges {@code tokens} spent by {@code key} (what a request generated), even below zero. */
    public synchronized void charge(String key, long tokens) {
        if (limits() && tokens > 0) {
            refilled(key).tokens -= tokens;
        }
    }

    private Bucket refilled(String key) {
        long now = nanos.getAsLong();
        Bucket b = buckets.computeIfAbsent(key, k -> new Bucket(perMinute, now));
        double refill = (now - b.at) * (double) perMinute / MINUTE_NANOS;
        b.tokens = Math.min(perMinute, b.tokens + refill);
        b.at = now;
        return b;
    }

    private long secondsUntilPositive(Bucket b) {
        double seconds = (1 - b.tokens) * 60.0 / perMinute;
        return Math.max(1, (long) Math.ceil(seconds));
    }

    private static final class Bucket {
        double tokens;
        long at;

        Bucket(double tokens, long at) {
            this.tokens = tokens;
            this.at = at;
        }
    }
}
