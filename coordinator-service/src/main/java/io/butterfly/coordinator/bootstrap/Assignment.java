package io.butterfly.coordinator.bootstrap;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.planning.StageAssignment;

/**
 * What a worker is told to load: its layer range of the model, fenced by the assignment's epoch and the
 * leader's Raft term (a worker refuses older terms).
 */
public record Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead,
                         long epoch, long term) {

    static Assignment of(String modelId, StageAssignment stage, long epoch, long term) {
        return new Assignment(modelId, stage.layerStart(), stage.layerEnd(), stage.hasEmbedding(), stage.hasHead(),
                epoch, term);
    }

    /** The assignment {@code node} holds in the current epoch of {@code state}, sent with {@code term}. */
    static Assignment current(ClusterState state, NodeRecord node, long term) {
        return new Assignment(state.modelId(), node.layerStart(), node.layerEnd(), node.hasEmbedding(),
                node.hasHead(), state.epoch(), term);
    }
}
