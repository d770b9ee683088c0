package io.butterfly.coordinator.api.rest;

import tools.jackson.databind.DatabindException;

/** The JSON path of the field a body failed on ("token_ids[2]"), when the parser knows it. */
final class JsonFieldPath {

    private JsonFieldPath() {
    }

    static String of(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof DatabindException de && !de.getPath().isEmpty()) {
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
