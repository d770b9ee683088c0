package io.butterfly.coordinator.inference;

/** A request field that cannot be served; the REST layer answers 400 (or 413) naming the field. */
public class InvalidRequestException extends RuntimeException {

    private final String field;
    private final boolean tooLarge;

    public InvalidRequestException(String field, String message) {
        this(field, message, false);
    }

    public InvalidRequestException(String field, String message, boolean tooLarge) {
        super(message);
        this.field = field;
        this.tooLarge = tooLarge;
    }

    public String field() {
        return field;
    }

    public boolean tooLarge() {
        return tooLarge;
    }
}
