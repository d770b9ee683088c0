package io.butterfly.coordinator.model;

/**
 * The registry holds no model by that id because its import failed (a malformed file, an unsupported tensor, memory
 * or disk run out): waiting will not make it appear, an operator must act. The message is the registry's cause.
 */
public class ModelImportFailedException extends RuntimeException {

    public ModelImportFailedException(String message, Throwable cause) {
        super(message, cause);
    }
}
