package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Work from any thread runs on the one engine thread, and answers as if it had run on the caller's. */
class EngineThreadTest {

    @Test
    void workFromManyThreadsRunsOnOneThread() throws Exception {
        Set<Thread> ranOn = ConcurrentHashMap.newKeySet();
        ExecutorService callers = Executors.newFixedThreadPool(8);
        try {
            List<Future<Integer>> answers = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                int n = i;
                answers.add(callers.submit(() -> EngineThread.call(() -> {
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
        assertThatThrownBy(() -> EngineThread.call(() -> {
            throw new IOException("shard unreadable");
        })).isInstanceOf(IOException.class).hasMessage("shard unreadable");
        assertThatThrownBy(() -> EngineThread.call(() -> {
            throw new IllegalStateException("replaced");
        })).isInstanceOf(IllegalStateException.class).hasMessage("replaced");
        assertThatThrownBy(() -> EngineThread.call(() -> {
            throw new OutOfMemoryError("native");
        })).isInstanceOf(OutOfMemoryError.class);
    }

    @Test
    void aCallFromTheEngineThreadRunsInPlace() throws Exception {
        String inner = EngineThread.call(() -> EngineThread.call(() -> Thread.currentThread().getName()));
        assertThat(inner).isEqualTo("engine");
    }

    @Test
    void anInterruptedCallerStillGetsItsAnswerAndKeepsTheInterrupt() throws Exception {
        Thread.currentThread().interrupt();
        try {
            assertThat(EngineThread.call(() -> {
                Thread.sleep(50);
                return "done";
            })).isEqualTo("done");
            assertThat(Thread.interrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
    }
}
