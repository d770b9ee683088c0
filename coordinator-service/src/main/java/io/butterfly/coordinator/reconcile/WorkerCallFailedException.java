package io.butterfly.coordinator.reconcile;

/** A worker did not take a call: it could not be reached, did not answer in time, or refused. */
public class WorkerCallFailedException extends RuntimeException {

    /** @param message what the transport said */
    public WorkerCallFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
