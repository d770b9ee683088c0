package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Work from any thread runs on its engine thread, and answers as if it had run on the caller's; each engine thread is
 * its owner's (a worker's), so workers of one process never wait in each other's queue.
 */
class EngineThreadTest {

    private final EngineThread engine = EngineThread.named("engine");

    @AfterEach
    void close() {
        engine.close();
    }

    @Test
    void workFromManyThreadsRunsOnOneThread() throws Exception {
        Set<Thread> ranOn = ConcurrentHashMap.newKeySet();
        ExecutorService callers = Executors.newFixedThreadPool(8);
        try {
            List<Future<Integer>> answers = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                int n = i;
                answers.add(callers.submit(() -> engine.call(() -> {
                    ranOn.add(Thread.currentThread());
                    return n * n;
                })));
            }
            for (int i = 0; i < answers.size(); i++) {
                assertThat(answers.get(i).get()).isEqualTo(i * i);
            }
        } finally {
            callers.shutdownNow();
        }
        assertThat(ranOn).hasSize(1);
        assertThat(ranOn.iterator().next().getName()).isEqualTo("engine");
    }

    @Test
    void failuresReachTheCallerAsThrown() {
        assertThatThrownBy(() -> engine.call(() -> {
            throw new IOException("shard unreadable");
        })).isInstanceOf(IOException.class).hasMessage("shard unreadable");
        assertThatThrownBy(() -> engine.call(() -> {
            throw new IllegalStateException("replaced");
        })).isInstanceOf(IllegalStateException.class).hasMessage("replaced");
        assertThatThrownBy(() -> engine.call(() -> {
            throw new OutOfMemoryError("native");
        })).isInstanceOf(OutOfMemoryError.class);
    }

    @Test
    void aCallFromTheEngineThreadRunsInPlace() throws Exception {
        String inner = engine.call(() -> engine.call(() -> Thread.currentThread().getName()));
        assertThat(inner).isEqualTo("engine");
    }

    @Test
    void withoutAnEngineThreadWorkRunsOnTheCaller() throws Exception {
        assertThat(EngineThread.on(null, Thread::currentThread)).isSameAs(Thread.currentThread());
        assertThat(EngineThread.on(engine, Thread::currentThread)).isNotSameAs(Thread.currentThread());
    }

    @Test
    void anInterruptedCallerStillGetsItsAnswerAndKeepsTheInterrupt() throws Exception {
        Thread.currentThread().interrupt();
        try {
            assertThat(engine.call(() -> {
                Thread.sleep(50);
                return "done";
            })).isEqualTo("done");
            assertThat(Thread.interrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }

    /**
     * Two workers of one process, one computing steps on its engine thread that each wait for a part the other worker
     * computes on its own, asked over another thread (a head-parallel stage and the shard it asks over gRPC): with one
     * engine thread per process the part queued behind the step waiting for it, and the step never ended. Seeded
     * random numbers of steps and parts.
     */
    @Test
    void aStepOnOneEngineThreadGetsAPartComputedOnAnother() throws Exception {
        Random random = new Random(53);
        ExecutorService transport = Executors.newCachedThreadPool();
        ExecutorService callers = Executors.newFixedThreadPool(3);
        try (EngineThread shard = EngineThread.named("engine")) {
            for (int round = 0; round < 10; round++) {
                List<Future<Integer>> steps = new ArrayList<>();
                List<Integer> expected = new ArrayList<>();
                int stepCount = 1 + random.nextInt(4);
                for (int s = 0; s < stepCount; s++) {
                    int parts = 1 + random.nextInt(5);
                    steps.add(callers.submit(() -> engine.call(() -> {
                        int sum = 0;
                        for (int p = 0; p < parts; p++) {
                            int n = p;
                            sum += transport.submit(() -> shard.call(() -> n + 1)).get(30, TimeUnit.SECONDS);
                        }
                        return sum;
                    })));
                    expected.add(parts * (parts + 1) / 2);
                }
                for (int s = 0; s < stepCount; s++) {
                    assertThat(steps.get(s).get(60, TimeUnit.SECONDS)).as("step %d of round %d", s, round)
                            .isEqualTo(expected.get(s));
                }
            }
        } finally {
            transport.shutdownNow();
            callers.shutdownNow();
        }
    }

    @Test
    void closedItRunsWhatWasQueuedAndRefusesMore() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch queuedRan = new CountDownLatch(1);
        engine.execute(() -> {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        engine.execute(queuedRan::countDown);
        engine.close();
        assertThatThrownBy(() -> engine.execute(() -> {
        })).isInstanceOf(RejectedExecutionException.class);
        assertThatThrownBy(() -> engine.call(() -> "after close")).isInstanceOf(RejectedExecutionException.class);
        release.countDown();
        assertThat(queuedRan.await(30, TimeUnit.SECONDS)).as("work queued before close ran").isTrue();
    }
}
