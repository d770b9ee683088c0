package io.butterfly.coordinator.control;

/** The control log could not commit a command (no leader reachable, no quorum, timeout). Retryable. */
public class ControlLogUnavailableException extends RuntimeException {

    public ControlLogUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
