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
 * @param layerStart        first layer (LAYER files only)
 * @param layerEnd          one past the last layer (LAYER files only)
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
}
