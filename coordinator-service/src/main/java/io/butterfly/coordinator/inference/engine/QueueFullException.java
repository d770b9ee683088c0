package io.butterfly.coordinator.inference.engine;

/** Refused: {@code max-waiting} requests wait already (429 with Retry-After). */
public final class QueueFullException extends RuntimeException {

    public QueueFullException(String message) {
        super(message);
    }
}
