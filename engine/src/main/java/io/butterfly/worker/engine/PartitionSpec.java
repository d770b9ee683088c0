package io.butterfly.worker.engine;

import io.butterfly.common.model.ModelConfig;
import java.util.Objects;

/**
 * The part of a model one worker executes: the half-open layer range {@code [layerStart, layerEnd)},
 * plus the token embedding (first stage) and/or the final norm and LM head (last stage).
 */
public record PartitionSpec(ModelConfig config, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead) {

    public PartitionSpec {
        Objects.requireNonNull(config, "config");
        if (layerStart < 0 || layerEnd < layerStart || layerEnd > config.numLayers()) {
            throw new IllegalArgumentException("layer range [" + layerStart + ", " + layerEnd
                    + ") is not inside the model's " + config.numLayers() + " layers");
        }
        if (hasEmbedding && layerStart != 0) {
            throw new IllegalArgumentException("only the stage starting at layer 0 can hold the embedding, not one starting at " + layerStart);
        }
        if (hasHead && layerEnd != config.numLayers()) {
            throw new IllegalArgumentException("only the stage ending at layer " + config.numLayers()
                    + " can hold the LM head, not one ending at " + layerEnd);
        }
        if (layerStart == layerEnd && !hasEmbedding && !hasHead) {
            throw new IllegalArgumentException("an empty layer range without embedding or head has nothing to execute");
        }
    }

    /** The whole model in one stage. */
    public static PartitionSpec whole(ModelConfig config) {
        return new PartitionSpec(config, 0, config.numLayers(), true, true);
    }

    public int numLayers() {
        return layerEnd - layerStart;
    }
}
