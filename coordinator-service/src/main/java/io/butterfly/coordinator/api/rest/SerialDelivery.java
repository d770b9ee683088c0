package io.butterfly.coordinator.api.rest;

import java.util.ArrayDeque;
import java.util.Queue;
import java.util.concurrent.Executor;

/**
 * One stream's writes, in order, one at a time, on a shared pool: the engine hands a token over without waiting for
 * the client, and a slow client holds only its own queue. Held back until {@link #start}.
 */
final class SerialDelivery implements Executor {

    private final Executor pool;
    private final Queue<Runnable> queue = new ArrayDeque<>();
    private boolean started;
    private boolean running;

    SerialDelivery(Executor pool) {
        this.pool = pool;
    }

    @Override
    public void execute(Runnable write) {
        synchronized (this) {
            queue.add(write);
            if (!started || running) {
                return;
            }
            running = true;
        }
        pool.execute(this::drain);
    }

    /** Lets the writes go out (the stream's format is known now). */
    void start() {
        synchronized (this) {
            started = true;
            if (running || queue.isEmpty()) {
                return;
            }
            running = true;
        }
        pool.execute(this::drain);
    }

    private void drain() {
        while (true) {
            Runnable next;
            synchronized (this) {
                next = queue.poll();
                if (next == null) {
                    running = false;
                    return;
                }
            }
            next.run();
        }
    }
}
