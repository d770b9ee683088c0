package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.planning.ModelFootprint;
import io.butterfly.coordinator.planning.ModelFootprints;
import io.butterfly.coordinator.planning.StageAssignment;

/**
 * The weights of the served model's stages as the state shows them: the format the model is stored in, and each
 * stage's weight bytes as the planner counts them (quantized blocks as stored, float weights at the workers'
 * precision; the KV cache apart). Unknown (null, 0) before this coordinator fetched the model.
 */
record StageWeights(String format, ModelFootprint footprint) {

    static final StageWeights UNKNOWN = new StageWeights(null, null);

    static StageWeights of(ModelCatalog catalog, ClusterState state) {
        ServedModel model = catalog == null ? null : catalog.served();
        if (model == null) {
            return UNKNOWN;
        }
        ModelFootprint f = ModelFootprints.of(model.manifest(), model.config(), new ModelFootprints.Settings(1, 1, 0),
                state.widestWeightBytes());
        return new StageWeights(model.manifest().dtype(), f);
    }

    long bytes(StageAssignment a) {
        if (footprint == null || a.layerEnd() > footprint.layerBytes().length) {
            return 0;
        }
        long bytes = 0;
        for (int l = a.layerStart(); l < a.layerEnd(); l++) {
            bytes += footprint.layerWeightBytes(l);
        }
        return bytes + (a.hasEmbedding() ? footprint.embeddingBytes() : 0) + (a.hasHead() ? footprint.headBytes() : 0);
    }
}
