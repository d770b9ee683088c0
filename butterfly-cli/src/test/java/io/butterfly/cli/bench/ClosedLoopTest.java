package io.butterfly.cli.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The closed loop: every request sent once, never more than the concurrency in flight, and that many reached. */
class ClosedLoopTest {

    @Test
    void keepsAtMostTheConcurrencyInFlightAndSendsEachRequestOnce() throws InterruptedException {
        Random random = new Random(32);
        for (int trial = 0; trial < 5; trial++) {
            int concurrency = 1 + random.nextInt(8);
            int requests = concurrency * (1 + random.nextInt(4)) + random.nextInt(3);
            long[] sleeps = random.longs(requests, 1, 6).toArray();
            AtomicInteger inFlight = new AtomicInteger();
            AtomicInteger most = new AtomicInteger();
            ConcurrentHashMap<Integer, Integer> sent = new ConcurrentHashMap<>();
            // The first wave waits until every client holds a request: on a loaded machine a 1-5 ms request could
            // otherwise end before the last client starts, and "all clients at once" would not be seen.
            CountDownLatch firstWave = new CountDownLatch(Math.min(concurrency, requests));
            ServeLevel level = ClosedLoop.run(concurrency, i -> i < requests, i -> {
                most.accumulateAndGet(inFlight.incrementAndGet(), Math::max);
                sent.merge(i, 1, Integer::sum);
                try {
                    if (i < concurrency) {
                        firstWave.countDown();
                        firstWave.await(10, TimeUnit.SECONDS);
                    }
                    Thread.sleep(sleeps[i]);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                inFlight.decrementAndGet();
                return new RequestTiming(null, 1, sleeps[i], sleeps[i], List.of());
            });
            assertThat(level.timings()).hasSize(requests);
            assertThat(sent).hasSize(requests).allSatisfy((i, times) -> assertThat(times).isEqualTo(1));
            assertThat(most.get()).isLessThanOrEqualTo(concurrency);
            if (requests >= concurrency) {
                // every client takes a request at once
                assertThat(most.get()).isEqualTo(concurrency);
            }
            assertThat(level.concurrency()).isEqualTo(concurrency);
            assertThat(level.nanos()).isPositive();
        }
    }
}
