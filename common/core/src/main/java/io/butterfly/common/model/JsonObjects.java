package io.butterfly.common.model;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The JSON object a model file holds, or an error naming the file. */
final class JsonObjects {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private JsonObjects() {
    }

    /** @throws IllegalArgumentException naming {@code file} when {@code json} is not a JSON object */
    static JsonNode read(byte[] json, String file) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (JacksonException e) {
            throw new IllegalArgumentException(file + " is not JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new IllegalArgumentException(file + " is not a JSON object");
        }
        return root;
    }
}
