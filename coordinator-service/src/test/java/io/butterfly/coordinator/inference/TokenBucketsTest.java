package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Issue 47, item 9: tokens per minute per API key. A key is admitted while its bucket holds tokens, pays for what it
 * spends (below zero if a request spent more), and is told how long until it may come back; other keys are not
 * charged for it; 0 turns the limit off.
 */
class TokenBucketsTest {

    private final AtomicLong now = new AtomicLong(1_000_000_000L);

    private void advanceSeconds(double seconds) {
        now.addAndGet((long) (seconds * 1e9));
    }

    @Test
    void aKeyThatSpentItsMinuteWaitsUntilItsBucketRefillsAndIsToldHowLong() {
        TokenBuckets buckets = new TokenBuckets(600, now::get); // 10 tokens a second
        assertThat(buckets.admit("a", 100)).isZero();
        buckets.charge("a", 600); // its generation: 700 spent, 100 past the minute's 600
        long wait = buckets.admit("a", 1);
        assertThat(wait).as("(100 + 1) tokens at 10 a second").isEqualTo(11);
        assertThat(buckets.admit("b", 1)).as("another key pays nothing for it").isZero();

        advanceSeconds(5);
        assertThat(buckets.admit("a", 1)).isEqualTo(6);
        advanceSeconds(6);
        assertThat(buckets.admit("a", 1)).isZero();
    }

    @Test
    void aBucketHoldsAMinuteAtMostAndZeroMeansNoLimit() {
        TokenBuckets buckets = new TokenBuckets(600, now::get);
        advanceSeconds(3600); // an hour idle saves no more than a minute
        assertThat(buckets.admit("a", 600)).isZero();
        assertThat(buckets.admit("a", 1)).isPositive();
        TokenBuckets off = new TokenBuckets(0, now::get);
        off.charge("a", 1_000_000);
        assertThat(off.admit("a", 1_000_000)).isZero();
    }
}
