package io.butterfly.coordinator.model;

/** The model registry could not be reached or did not answer in time; asking again later may succeed. */
public class RegistryUnavailableException extends RuntimeException {

    /** @param message what the transport said */
    public RegistryUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
