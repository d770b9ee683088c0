package io.butterfly.registry.config;

import java.nio.file.Path;
import java.util.List;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Registry settings.
 *
 * @param storeDir      where imported models live ({@code <store>/<modelId>/})
 * @param importDirs    Hugging Face model directories and GGUF files imported at start-up (model id = the directory's
 *                      name, with {@code -<quantization>} when quantized, or the file's name without {@code .gguf})
 * @param importQuantize how the start-up imports' model directories are quantized: q8, q4, q4_k, or empty for as they
 *                      are ({@code WeightQuantization}); GGUF files are served as they are
 * @param maxChunkBytes largest FetchFile chunk served (clients may ask for less)
 * @param zstdLevel     zstd level for chunks sent to clients that offer COMPRESSION (0 = never compress)
 * @param importRoots   the directories an import asked over the API ({@code POST /api/v1/models}) may read from;
 *                      none (the default): such imports are refused. The start-up imports are not bound by them
 * @param publisherDir  the publisher identity ({@code identity.key}, {@code identity.pub}) that signs manifests;
 *                      default {@code <store>/publisher}, created there on first start. Point it at a provisioned
 *                      key (e.g. a Kubernetes Secret from {@code ./butterfly keygen}) so that coordinators and
 *                      workers can be told the public key before the registry first starts.
 */
@ConfigurationProperties("butterfly.registry")
public record RegistryProperties(
        @DefaultValue(".butterfly/registry") Path storeDir,
        @DefaultValue List<Path> importDirs,
        @DefaultValue("") String importQuantize,
        @DefaultValue("1048576") int maxChunkBytes,
        @DefaultValue("3") int zstdLevel,
        Path publisherDir,
        @DefaultValue List<Path> importRoots) {

    /** How the start-up imports' directories are quantized, or null for not at all. */
    public io.butterfly.common.quant.WeightQuantization quantization() {
        return io.butterfly.common.quant.WeightQuantization.byId(importQuantize).orElse(null);
    }

    /** Keeps a chunk and its envelope below gRPC's default 4 MiB inbound limit on clients. */
    public static final int CHUNK_LIMIT = 4 * 1024 * 1024 - 64 * 1024;

    public RegistryProperties {
        importDirs = importDirs == null ? List.of() : List.copyOf(importDirs);
        importRoots = importRoots == null ? List.of() : List.copyOf(importRoots);
        importQuantize = importQuantize == null ? "" : importQuantize.trim();
        if (!importQuantize.isEmpty() && io.butterfly.common.quant.WeightQuantization.byId(importQuantize).isEmpty()) {
            throw new IllegalArgumentException("butterfly.registry.import-quantize must be q8, q4 or q4_k, not '"
                    + importQuantize + "'");
        }
        // By default the key lives in the store, so that a restarted registry signs with the same key.
        publisherDir = publisherDir != null ? publisherDir : storeDir.resolve("publisher");
        if (maxChunkBytes <= 0 || maxChunkBytes > CHUNK_LIMIT) {
            throw new IllegalArgumentException("butterfly.registry.max-chunk-bytes must be in (0, " + CHUNK_LIMIT + "]: "
                    + maxChunkBytes);
        }
        if (zstdLevel < 0 || zstdLevel > 19) {
            throw new IllegalArgumentException("butterfly.registry.zstd-level must be in [0, 19]: " + zstdLevel);
        }
    }
}
