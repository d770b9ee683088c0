package io.butterfly.common.retry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.error.Backoff;
import io.butterfly.common.error.RetrySettings;
import io.github.resilience4j.retry.Retry;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The one retry policy: how many tries, how long between them, what ends it. */
class RetriesTest {

    private static final RetrySettings THREE_TRIES = new RetrySettings(3, Duration.ofMillis(20), Duration.ofMillis(30));

    @Test
    void aCallThatFailsTwiceThenSucceedsIsAnsweredAfterTheDocumentedWaits() {
        AtomicInteger tries = new AtomicInteger();
        List<Long> startedAt = new ArrayList<>();
        Retry retry = Retries.onFailure("test", THREE_TRIES, Backoff.Jitter.NONE, e -> e instanceof IllegalStateException);
        String answer = retry.executeSupplier(() -> {
            startedAt.add(System.nanoTime());
            if (tries.incrementAndGet() < 3) {
                throw new IllegalStateException("not yet " + tries.get());
            }
            return "ok";
        });
        assertThat(answer).isEqualTo("ok");
        assertThat(tries).hasValue(3);
        // 20 ms, then doubled but capped at 30 ms.
        assertThat((startedAt.get(1) - startedAt.get(0)) / 1_000_000).isGreaterThanOrEqualTo(20);
        assertThat((startedAt.get(2) - startedAt.get(1)) / 1_000_000).isGreaterThanOrEqualTo(30);
        assertThat(retry.getMetrics().getNumberOfSuccessfulCallsWithRetryAttempt()).isEqualTo(1);
    }

    @Test
    void onceTheTriesAreSpentTheLastFailureIsThrown() {
        AtomicInteger tries = new AtomicInteger();
        Retry retry = Retries.onFailure("test", THREE_TRIES, Backoff.Jitter.NONE, e -> true);
        assertThatThrownBy(() -> retry.executeRunnable(() -> {
            throw new IllegalStateException("registry unreachable, try " + tries.incrementAndGet());
        })).isInstanceOf(IllegalStateException.class).hasMessage("registry unreachable, try 3");
        assertThat(tries).hasValue(3);
    }

    @Test
    void aFailureThePredicateRefusesIsThrownAtOnce() {
        AtomicInteger tries = new AtomicInteger();
        Retry retry = Retries.onFailure("test", THREE_TRIES, Backoff.Jitter.NONE, e -> e instanceof IllegalStateException);
        assertThatThrownBy(() -> retry.executeRunnable(() -> {
            tries.incrementAndGet();
            throw new IllegalArgumentException("refused for good");
        })).isInstanceOf(IllegalArgumentException.class);
        assertThat(tries).hasValue(1);
    }

    /** Seeded: any mix of TryAgain and an end is tried exactly until the end, waiting what each TryAgain said. */
    @Test
    void untilDoneTriesUntilTheCallEndsWaitingWhatItAsks() throws IOException {
        Random random = new Random(45);
        for (int round = 0; round < 20; round++) {
            int again = random.nextInt(4);
            boolean fails = random.nextBoolean();
            AtomicInteger tries = new AtomicInteger();
            long started = System.nanoTime();
            Retries.Attempt<String, IOException> attempt = () -> {
                if (tries.incrementAndGet() <= again) {
                    throw new Retries.TryAgain(new IllegalStateException("busy"), 2);
                }
                if (fails) {
                    throw new IOException("disk full");
                }
                return "done";
            };
            if (fails) {
                assertThatThrownBy(() -> Retries.untilDone("test", attempt)).isInstanceOf(IOException.class)
                        .hasMessage("disk full");
            } else {
                assertThat(Retries.untilDone("test", attempt)).isEqualTo("done");
            }
            assertThat(tries).hasValue(again + 1);
            assertThat((System.nanoTime() - started) / 1_000_000).isGreaterThanOrEqualTo(2L * again);
        }
    }

    @Test
    void anInterruptedWaitThrowsTheFailureAndKeepsTheInterrupt() {
        IllegalStateException busy = new IllegalStateException("discovery unreachable");
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> Retries.untilDone("test", () -> {
                throw new Retries.TryAgain(busy, 10_000);
            })).isSameAs(busy);
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }
}
