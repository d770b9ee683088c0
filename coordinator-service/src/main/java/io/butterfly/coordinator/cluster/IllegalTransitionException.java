package io.butterfly.coordinator.cluster;

/**
 * A command the reducer refuses in the current state (a forbidden system transition, a stale epoch,
 * an unknown node or task). The state is left unchanged; callers map it to their own error surface.
 */
public class IllegalTransitionException extends RuntimeException {

    public IllegalTransitionException(String message) {
        super(message);
    }
}
