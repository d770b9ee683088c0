package io.butterfly.common.manifest;

import java.util.List;
import java.util.Optional;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * What the registry serves for one model: its shape and its files, bound by a Merkle root over the
 * files' checksums in manifest order (config, tokenizer, embedding, layers ascending, head), and
 * signed (Ed25519, hex) by the registry's publisher key; unsigned while {@code signature} is null.
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record Manifest(
        String modelId,
        String architecture,
        String version,
        int numLayers,
        long parameterCount,
        int hiddenSize,
        int vocabSize,
        String dtype,
        List<ManifestFile> files,
        String merkleRoot,
        long createdAtMs,
        String publisherKey,
        String signature) {

    public Manifest {
        files = List.copyOf(files);
    }

    public Manifest signed(String publisherKeyHex, String signatureHex) {
        return new Manifest(modelId, architecture, version, numLayers, parameterCount, hiddenSize, vocabSize, dtype,
                files, merkleRoot, createdAtMs, publisherKeyHex, signatureHex);
    }

    public Optional<ManifestFile> file(String name) {
        return files.stream().filter(f -> f.name().equals(name)).findFirst();
    }

    public long totalBytes() {
        return files.stream().mapToLong(ManifestFile::sizeBytes).sum();
    }
}
