package io.butterfly.coordinator.planning;

import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.model.ModelConfig;

/**
 * Estimates a model's memory need from its manifest and config (docs/initialization-and-bootstrap.md §5.1):
 * each shard's size as the workers hold it (layers and the LM head at the workers' weight precision,
 * {@code butterfly.worker.weight-dtype}: an F16 checkpoint takes twice its file size held in float32, an F32 one
 * half held in BF16; the embedding table in float32), plus per layer a float32 KV cache (keys and values) for the
 * configured tokens and sequences, plus the activation headroom per stage. A layer's norms and biases count at the
 * weights' precision too: a fraction of a percent of it. A quantized model (its manifest's dtype a ggml block type:
 * Q8_0, Q4_0, Q4_K, ...) is held as its shards store it, by the workers' native kernels: each shard counts its size,
 * the embedding's included (a 4-bit model plans in a quarter of its float32 memory).
 */
public final class ModelFootprints {

    /**
     * @param kvCacheTokens           tokens of KV cache reserved per layer (0 = the model's maximum positions)
     * @param kvCacheSequences        sequences held at once (the KV cache is per sequence)
     * @param activationHeadroomBytes memory each stage needs beyond weights and KV cache (activations, scratch)
     * @param kvCacheBudgetBytes      with {@code kvCacheTokens} 0, the most one sequence's KV cache over all layers is
     *                                counted at (0 = no cap): the workers' KV budget, which refuses a cache beyond it,
     *                                so a model of 131,072 positions does not plan 32 GiB for a context no worker
     *                                would hold
     */
    public record Settings(int kvCacheTokens, int kvCacheSequences, long activationHeadroomBytes,
                           long kvCacheBudgetBytes) {

        public Settings(int kvCacheTokens, int kvCacheSequences, long activationHeadroomBytes) {
            this(kvCacheTokens, kvCacheSequences, activationHeadroomBytes, 0);
        }
    }

    private ModelFootprints() {
    }

    /** @param weightBytes bytes a projection weight takes in the workers' engines (4 float32, 2 F16/BF16) */
    public static ModelFootprint of(Manifest manifest, ModelConfig config, Settings p, int weightBytes) {
        int layers = manifest.numLayers();
        boolean blocks = quantized(manifest.dtype());
        long stored = storedBytes(manifest.dtype());
        long tokens = p.kvCacheTokens() > 0 ? p.kvCacheTokens() : defaultTokens(config, layers, p.kvCacheBudgetBytes());
        long kvPerLayer = 2L * config.kvDim() * tokens * Math.max(1, p.kvCacheSequences()) * Float.BYTES;
        long[] layerBytes = new long[layers];
        long embedding = 0;
        long head = 0;
        for (ManifestFile f : manifest.files()) {
            long bytes = blocks ? f.sizeBytes() : f.sizeBytes() * weightBytes / stored;
            switch (f.kind()) {
                case EMBEDDING -> embedding += blocks ? f.sizeBytes() : f.sizeBytes() * Float.BYTES / stored;
                case HEAD -> head += bytes;
                case LAYER -> {
                    // A shard may hold several layers: spread it evenly over them.
                    int n = Math.max(1, f.layerEnd() - f.layerStart());
                    for (int l = f.layerStart(); l < f.layerEnd() && l < layers; l++) {
                        layerBytes[l] += bytes / n;
                    }
                }
                default -> { }
            }
        }
        for (int l = 0; l < layers; l++) {
            layerBytes[l] += kvPerLayer;
        }
        return new ModelFootprint(layerBytes, embedding, head, p.activationHeadroomBytes(), kvPerLayer);
    }

    /**
     * The model's positions, or fewer when one sequence's float32 keys and values for that many over all layers would
     * be more than {@code budget} (0: no cap).
     */
    static long defaultTokens(ModelConfig config, int layers, long budget) {
        long positions = Math.max(1, config.maxPositions());
        if (budget <= 0) {
            return positions;
        }
        long perToken = 2L * config.kvDim() * Math.max(1, layers) * Float.BYTES;
        return Math.max(1, Math.min(positions, budget / perToken));
    }

    /** Whether a manifest's dtype is one of ggml's block types (its workers hold the shards' bytes as they are). */
    static boolean quantized(String dtype) {
        return io.butterfly.common.quant.GgmlType.byName(dtype == null ? "" : dtype)
                .map(io.butterfly.common.quant.GgmlType::quantized).orElse(false);
    }

    /** Bytes of a parameter in a checkpoint of this dtype. */
    static long storedBytes(String dtype) {
        return switch (dtype == null ? "" : dtype.toUpperCase(java.util.Locale.ROOT)) {
            case "F16", "BF16", "FLOAT16", "BFLOAT16" -> 2;
            default -> 4;
        };
    }
}
