package io.butterfly.cli.bench;

import io.butterfly.common.concurrent.DaemonThreads;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;

/**
 * A closed-loop load: {@code concurrency} clients, each sending its next request as soon as its last one has been
 * answered, so at most that many are in flight. Each client is a thread of its own that waits on its stream: with
 * a few dozen streams, threads keep the client from being what limits the rate.
 */
final class ClosedLoop {

    private ClosedLoop() {
    }

    /**
     * Sends requests 0, 1, 2, ... ({@code send} sends request i and answers its timing) while {@code more} accepts
     * the next index, and returns them all once every client is done.
     */
    static ServeLevel run(int concurrency, IntPredicate more, IntFunction<RequestTiming> send) throws InterruptedException {
        AtomicInteger next = new AtomicInteger();
        List<RequestTiming> timings = Collections.synchronizedList(new ArrayList<>());
        List<Thread> clients = new ArrayList<>();
        long start = System.nanoTime();
        for (int c = 0; c < concurrency; c++) {
            // A daemon: Ctrl-C ends the run without waiting for open streams.
            Thread client = DaemonThreads.start("bench-serve-client-" + c, () -> {
                for (int i = next.getAndIncrement(); more.test(i); i = next.getAndIncrement()) {
                    timings.add(send.apply(i));
                }
            });
            clients.add(client);
        }
        for (Thread client : clients) {
            client.join();
        }
        return new ServeLevel(concurrency, timings, System.nanoTime() - start);
    }
}
