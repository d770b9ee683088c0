package io.butterfly.worker.pipeline;

import io.butterfly.common.verify.PrecisionContract;

/**
 * What one stage computed for a step (docs/verified-execution.md): per sequence, in batch order, the XXH64 of its
 * output rows (hidden states), or on the last stage of its logits row (0: no row, the sequence skips logits).
 */
public record StageHashes(String nodeId, PrecisionContract contract, long[] outputHashes, java.util.List<Layer> layers) {

    public StageHashes {
        layers = java.util.List.copyOf(layers);
    }

    /** A stage's hashes without per-layer ones (none asked). */
    public StageHashes(String nodeId, PrecisionContract contract, long[] outputHashes) {
        this(nodeId, contract, outputHashes, java.util.List.of());
    }

    /**
     * Per-layer snapshot hashes (asked by a sequence's {@code layer_hashes}): what one layer computed of the step.
     *
     * @param layer        the model's layer index
     * @param outputHashes per sequence, in batch order: XXH64 of its rows of the layer's output
     */
    public record Layer(int layer, long[] outputHashes) {
    }
}
