package io.butterfly.common.json;

import tools.jackson.core.JacksonException;
import tools.jackson.core.exc.StreamReadException;
import tools.jackson.databind.exc.MismatchedInputException;

/** The JSON path of the field a body failed on ("token_ids[2]"), when the parser knows it. */
public final class JsonFieldPath {

    private JsonFieldPath() {
    }

    /** The path, or null if no Jackson error in {@code t}'s causes knows one. */
    public static String of(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            // Parser errors (a number out of range) carry the path too, not only binding errors.
            if (c instanceof JacksonException de && !de.getPath().isEmpty()) {
                StringBuilder sb = new StringBuilder();
                for (var ref : de.getPath()) {
                    if (ref.getPropertyName() != null) {
                        if (!sb.isEmpty()) {
                            sb.append('.');
                        }
                        sb.append(ref.getPropertyName());
                    } else if (ref.getIndex() >= 0) {
                        sb.append('[').append(ref.getIndex()).append(']');
                    }
                }
                return sb.isEmpty() ? null : sb.toString();
            }
        }
        return null;
    }

    /**
     * What is wrong with a body no field of which is to blame: not JSON at all, JSON but not an object
     * ({@code []}, {@code 42}), or nothing ({@code null} or no body).
     */
    public static String bodyProblem(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof StreamReadException) {
                return "request body is not valid JSON";
            }
            if (c instanceof MismatchedInputException) {
                return "request body must be a JSON object";
            }
        }
        return "request body is missing (or JSON null); send a JSON object";
    }
}
