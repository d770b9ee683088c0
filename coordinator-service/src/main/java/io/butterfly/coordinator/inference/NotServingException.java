package io.butterfly.coordinator.inference;

/** Inference was asked for while the cluster cannot serve it (not READY); REST answers 409. */
public class NotServingException extends RuntimeException {
    public NotServingException(String message) {
        super(message);
    }
}
