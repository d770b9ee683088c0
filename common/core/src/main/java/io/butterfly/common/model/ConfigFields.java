package io.butterfly.common.model;

import tools.jackson.databind.JsonNode;

/**
 * A {@code config.json} field read as the JSON type it must have, or refused naming the field. Jackson's own
 * coercions would read {@code "num_hidden_layers": 2.7} as 2 and throw its own exception for {@code "abc"}; a
 * configuration is either read as written or refused with an {@link IllegalArgumentException} that says which field.
 */
final class ConfigFields {

    private ConfigFields() {
    }

    /** An integer field that fits an {@code int}; {@code fallback} when absent or null. */
    static int integer(JsonNode object, String field, int fallback) {
        JsonNode v = object.get(field);
        if (absent(v)) {
            return fallback;
        }
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new IllegalArgumentException(field + " must be an integer, not " + v);
        }
        return v.intValue();
    }

    /** Element {@code index} of the array in {@code field}: an integer that fits an {@code int}. */
    static int integer(JsonNode array, int index, String field) {
        JsonNode v = array.get(index);
        if (!v.isIntegralNumber() || !v.canConvertToInt()) {
            throw new IllegalArgumentException(field + "[" + index + "] must be an integer, not " + v);
        }
        return v.intValue();
    }

    /** A finite number; {@code fallback} when absent or null. */
    static double number(JsonNode object, String field, double fallback) {
        JsonNode v = object.get(field);
        if (absent(v)) {
            return fallback;
        }
        if (!v.isNumber() || !Double.isFinite(v.doubleValue())) {
            throw new IllegalArgumentException(field + " must be a finite number, not " + v);
        }
        return v.doubleValue();
    }

    static boolean bool(JsonNode object, String field, boolean fallback) {
        JsonNode v = object.get(field);
        if (absent(v)) {
            return fallback;
        }
        if (!v.isBoolean()) {
            throw new IllegalArgumentException(field + " must be true or false, not " + v);
        }
        return v.booleanValue();
    }

    static String string(JsonNode object, String field, String fallback) {
        JsonNode v = object.get(field);
        if (absent(v)) {
            return fallback;
        }
        if (!v.isString()) {
            throw new IllegalArgumentException(field + " must be a string, not " + v);
        }
        return v.stringValue();
    }

    static boolean absent(JsonNode v) {
        return v == null || v.isNull();
    }
}
