package io.butterfly.coordinator.planning;

/**
 * One pipeline stage: a worker and its contiguous half-open layer range {@code [layerStart, layerEnd)}.
 *
 * @param nodeId       worker running the stage
 * @param layerStart   first layer (inclusive)
 * @param layerEnd     last layer (exclusive)
 * @param hasEmbedding whether the stage holds the token embedding (the first stage)
 * @param hasHead      whether the stage holds the final norm and LM head (the last stage)
 */
public record StageAssignment(String nodeId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead) {

    public StageAssignment {
        if (nodeId == null || nodeId.isBlank()) {
            throw new IllegalArgumentException("nodeId must not be blank");
        }
        if (layerStart < 0 || layerEnd <= layerStart) {
            throw new IllegalArgumentException("invalid layer range [" + layerStart + ", " + layerEnd + ") for " + nodeId);
        }
    }

    /** Number of transformer layers in this stage. */
    public int numLayers() {
        return layerEnd - layerStart;
    }
}
