package io.butterfly.common.api;

import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/** The coordinator's {@code GET /v1/models}, in OpenAI's shape: the served model, or none while it serves none. */
public record OpenAiModels(String object, List<Model> data) {

    public static OpenAiModels of(List<Model> data) {
        return new OpenAiModels("list", data);
    }

    /**
     * {@code GET /v1/models/{id}}: OpenAI's fields, then vLLM's {@code max_model_len} and the weights' Merkle root.
     *
     * @param created seconds since the epoch
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Model(String id, String object, long created, String ownedBy, int maxModelLen, String merkleRoot) {
    }
}
