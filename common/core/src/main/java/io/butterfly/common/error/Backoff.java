package io.butterfly.common.error;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.random.RandomGenerator;

/**
 * The one retry policy every Butterfly retry waits by: exponential from {@code first}, doubling per retry, capped at
 * {@code max} (or at {@code first} if that is larger), and spread by a {@link Jitter} so that peers retrying the same
 * thing do not retry in step. Plain Java, so the pure packages wait by it too; where a retry is counted, and what
 * ends it, stays with the caller.
 */
public record Backoff(Duration first, Duration max, Jitter jitter) {

    /** How a wait is spread. */
    public enum Jitter {
        /** Exactly the exponential wait. */
        NONE,
        /** The wait plus up to half again. */
        ADD_HALF,
        /** Between half the wait and all of it ("equal jitter"). */
        EQUAL
    }

    public Backoff {
        if (first.isNegative() || max.isNegative()) {
            throw new IllegalArgumentException("a backoff's waits are not negative: " + first + ", " + max);
        }
    }

    /** Doubling from {@code first} up to {@code max}, without jitter. */
    public static Backoff exponential(Duration first, Duration max) {
        return new Backoff(first, max, Jitter.NONE);
    }

    public Backoff withJitter(Jitter spread) {
        return new Backoff(first, max, spread);
    }

    /** The wait before retry {@code retry} (0: the first retry), in nanoseconds, before jitter. */
    public long nanos(int retry) {
        long cap = Math.max(max.toNanos(), first.toNanos());
        long wait = first.toNanos();
        for (int i = 0; i < retry && wait < cap; i++) {
            wait = wait > cap / 2 ? cap : wait * 2;
        }
        return Math.min(wait, cap);
    }

    /** The wait before retry {@code retry} (0: the first retry), in milliseconds, jittered. */
    public long millis(int retry) {
        return millis(retry, ThreadLocalRandom.current());
    }

    /** As {@link #millis(int)}, drawing the jitter from {@code random}. */
    public long millis(int retry, RandomGenerator random) {
        long wait = nanos(retry) / 1_000_000;
        return switch (jitter) {
            case NONE -> wait;
            case ADD_HALF -> wait + random.nextLong(wait / 2 + 1);
            case EQUAL -> random.nextLong(wait / 2, wait + 1);
        };
    }
}
