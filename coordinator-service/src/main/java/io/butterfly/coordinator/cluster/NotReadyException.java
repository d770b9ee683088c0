package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.IllegalTransitionException;

/**
 * New work refused because the system is not serving (not READY or COMPUTING): a {@code TaskSubmitted} of a log
 * written before tasks were recorded in batches (a replica now refuses such work itself, before it runs). A subtype of
 * {@link IllegalTransitionException} so the reducer has one rejection contract, while the REST layer
 * can still answer it with 409 rather than a server error.
 */
public class NotReadyException extends IllegalTransitionException {

    public NotReadyException(String message) {
        super(message);
    }
}
