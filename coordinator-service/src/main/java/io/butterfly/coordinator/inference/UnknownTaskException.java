package io.butterfly.coordinator.inference;

import java.util.NoSuchElementException;

/**
 * A task id this cluster holds no task under for the requester: never recorded, or another API key's (which is not
 * told apart, so that a key learns nothing of another's tasks). REST answers 404 naming the field it came in.
 */
public class UnknownTaskException extends NoSuchElementException {

    private final String field;

    public UnknownTaskException(String field, String taskId) {
        super("no task " + taskId + (field == null ? "" : " (" + field + ")"));
        this.field = field;
    }

    /** The request's field the id came in ({@code Last-Event-ID}, a path), or null. */
    public String field() {
        return field;
    }
}
