package io.butterfly.coordinator.inference;

/** A request names a model this cluster does not serve; the REST layer answers 404 naming the field. */
public class UnknownModelException extends RuntimeException {

    private final String field;

    public UnknownModelException(String field, String requested, String served) {
        super("model '" + requested + "' is not served here; this cluster serves '" + served + "'");
        this.field = field;
    }

    public String field() {
        return field;
    }
}
