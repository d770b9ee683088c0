package io.butterfly.coordinator.structured;

/** A schema the matcher cannot serve: outside the supported subset, or malformed; {@code path} names where. */
public final class SchemaException extends RuntimeException {

    private final String path;

    SchemaException(String path, String message) {
        super(path + ": " + message);
        this.path = path;
    }

    /** Where in the schema ({@code #/properties/name}). */
    public String path() {
        return path;
    }
}
