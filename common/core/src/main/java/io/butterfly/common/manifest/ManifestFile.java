package io.butterfly.common.manifest;

import com.fasterxml.jackson.annotation.JsonInclude;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * One stored file of a model.
 *
 * @param name              file name inside the model's directory
 * @param sizeBytes         exact size
 * @param checksumAlgorithm always {@code sha256}
 * @param checksum          lowercase hex
 * @param kind              what the file holds
 * @param layerStart        first layer (LAYER files; null for the others)
 * @param layerEnd          one past the last layer (LAYER files; null for the others)
 * @param format            {@code safetensors} or {@code json}
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
@JsonInclude(JsonInclude.Include.NON_NULL)
public record ManifestFile(
        String name,
        long sizeBytes,
        String checksumAlgorithm,
        String checksum,
        FileKind kind,
        Integer layerStart,
        Integer layerEnd,
        String format) {

    /** Whether a stage holding layers {@code [start, end)}, with the embedding and/or the head, needs this file. */
    public boolean neededBy(int start, int end, boolean embedding, boolean head) {
        return switch (kind) {
            case CONFIG -> true;
            case EMBEDDING -> embedding;
            case HEAD -> head;
            case LAYER -> layerStart < end && layerEnd > start;
            case TOKENIZER, TOKENIZER_CONFIG, CHAT_TEMPLATE, FILE_KIND_UNSPECIFIED -> false;
        };
    }

    /** Whether the coordinator reads this file itself: to tokenize, render chats and know the model's shape. */
    public boolean neededByCoordinator() {
        return switch (kind) {
            case CONFIG, TOKENIZER, TOKENIZER_CONFIG, CHAT_TEMPLATE -> true;
            case EMBEDDING, LAYER, HEAD, FILE_KIND_UNSPECIFIED -> false;
        };
    }
}
