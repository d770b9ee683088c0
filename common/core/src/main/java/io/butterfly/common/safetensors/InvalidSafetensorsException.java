package io.butterfly.common.safetensors;

/** A safetensors file whose header or layout breaks the format. */
public class InvalidSafetensorsException extends RuntimeException {
    public InvalidSafetensorsException(String message) {
        super(message);
    }
}
