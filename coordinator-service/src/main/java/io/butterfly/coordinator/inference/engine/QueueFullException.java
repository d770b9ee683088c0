package io.butterfly.coordinator.inference.engine;

/**
 * Refused for want of room, not for what was asked: the queue is full, an API key holds its share of it, or its
 * tokens per minute are spent (429 with {@code Retry-After}: {@link #retryAfterSeconds}).
 */
public final class QueueFullException extends RuntimeException {

    private final long retryAfterSeconds;

    public QueueFullException(String message) {
        this(message, 1);
    }

    public QueueFullException(String message, long retryAfterSeconds) {
        super(message);
        this.retryAfterSeconds = Math.max(1, retryAfterSeconds);
    }

    /** When a retry may be taken, in whole seconds (at least 1). */
    public long retryAfterSeconds() {
        return retryAfterSeconds;
    }
}
