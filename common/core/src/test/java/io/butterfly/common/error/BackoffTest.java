package io.butterfly.common.error;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;

class BackoffTest {

    @Test
    void waitsDoubleFromTheFirstUpToTheCapAndNeverOverflow() {
        Backoff b = Backoff.exponential(Duration.ofMillis(400), Duration.ofSeconds(5));
        assertThat(java.util.stream.IntStream.range(0, 7).mapToLong(b::millis).toArray())
                .containsExactly(400, 800, 1600, 3200, 5000, 5000, 5000);
        assertThat(b.millis(Integer.MAX_VALUE)).isEqualTo(5000);
        assertThat(Backoff.exponential(Duration.ofMillis(700), Duration.ofMillis(100)).millis(3))
                .as("a first wait above the cap is the cap").isEqualTo(700);
        assertThat(Backoff.exponential(Duration.ofMillis(500), Duration.ofSeconds(2)).nanos(1)).isEqualTo(1_000_000_000L);
    }

    /** Seeded: each jitter stays in its band around the exponential wait. */
    @Test
    void jitterStaysInItsBand() {
        Random random = new Random(11);
        Backoff base = Backoff.exponential(Duration.ofMillis(50), Duration.ofSeconds(2));
        for (int retry = 0; retry < 12; retry++) {
            long wait = base.millis(retry);
            for (int i = 0; i < 200; i++) {
                assertThat(base.withJitter(Backoff.Jitter.ADD_HALF).millis(retry, random)).isBetween(wait, wait + wait / 2);
                assertThat(base.withJitter(Backoff.Jitter.EQUAL).millis(retry, random)).isBetween(wait / 2, wait);
            }
        }
    }
}
