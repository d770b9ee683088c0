package io.butterfly.common.api;

import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/** How a client reads these records: tolerantly, so that a server newer or older by a field still reads. */
public final class ApiJson {

    private static final JsonMapper READER = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .disable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .build();

    private ApiJson() {
    }

    /** A field the server adds is skipped; one it leaves out reads as null, 0 or false. */
    public static JsonMapper reader() {
        return READER;
    }
}
