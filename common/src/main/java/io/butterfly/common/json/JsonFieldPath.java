package io.butterfly.common.json;

import tools.jackson.core.JacksonException;

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
}
