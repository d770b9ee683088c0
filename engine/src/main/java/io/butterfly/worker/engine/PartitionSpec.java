package io.butterfly.worker.engine;

import io.butterfly.common.model.ModelConfig;
import java.util.Objects;

/**
 * The part of a model one worker executes: the half-open layer range {@code [layerStart, layerEnd)},
 * plus the token embedding (first stage) and/or the final norm and LM head (last stage); with {@code experts}, which of
 * the range's routed experts it holds and who holds the others (null: all of them, here).
 */
public record PartitionSpec(ModelConfig config, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead,
                            ExpertPlacement experts) {

    /** All of the range's experts held here. */
    public PartitionSpec(ModelConfig config, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead) {
        this(config, layerStart, layerEnd, hasEmbedding, hasHead, null);
    }

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
        if (experts != null) {
            if (config.experts() == null || experts.expertCount() != config.experts().experts()) {
                throw new IllegalArgumentException("an expert placement over " + experts.expertCount()
                        + " experts for a model with " + (config.experts() == null ? "none" : config.experts().experts()));
            }
            if (experts.expertsOnly() && (hasEmbedding || hasHead)) {
                throw new IllegalArgumentException("a partition holding only experts holds no embedding or head");
            }
        }
    }

    /** The whole model in one stage. */
    public static PartitionSpec whole(ModelConfig config) {
        return new PartitionSpec(config, 0, config.numLayers(), true, true);
    }

    public int numLayers() {
        return layerEnd - layerStart;
    }

    /** Whether other workers hold some of this range's experts (a step then asks them for their sums). */
    public boolean spreadsExperts() {
        return experts != null && experts.groups().size() > 1;
    }

    /** The experts this partition holds of each sparse layer: {@code [first, end)}. */
    public int[] heldExperts() {
        return experts == null ? new int[]{0, config.experts() == null ? 0 : config.experts().experts()}
                : new int[]{experts.own().first(), experts.own().end()};
    }
}
