package io.butterfly.coordinator.inference;

import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * At most {@code limit} tasks run on this coordinator replica at once; one more is refused at once (REST 429)
 * rather than queued behind them. Every running task holds a KV cache on every stage and a request thread
 * here, so an unbounded number of clients could exhaust either (Hugging Face TGI refuses past its
 * {@code max_concurrent_requests} the same way).
 */
public final class TaskAdmission {

    /** Refused: {@code limit} tasks are running. */
    public static final class TooManyTasksException extends RuntimeException {
        public TooManyTasksException(String message) {
            super(message);
        }
    }

    /** A running task's place; closing it frees the place. */
    public interface Permit extends AutoCloseable {
        @Override
        void close();
    }

    private final int limit;
    private final Semaphore places;

    public TaskAdmission(int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("max-concurrent-tasks must be at least 1, got " + limit);
        }
        this.limit = limit;
        this.places = new Semaphore(limit);
    }

    /** A place for one task, or {@link TooManyTasksException} when all are taken. */
    public Permit admit() {
        if (!places.tryAcquire()) {
            throw new TooManyTasksException(limit + " tasks are running on this coordinator, the most it admits at once"
                    + " (butterfly.coordinator.max-concurrent-tasks); retry shortly");
        }
        AtomicBoolean closed = new AtomicBoolean();
        return () -> {
            if (closed.compareAndSet(false, true)) { // a permit frees its place once, however often it is closed
                places.release();
            }
        };
    }

    /** Tasks running now. */
    public int running() {
        return limit - places.availablePermits();
    }
}
