package io.butterfly.coordinator.reconcile;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeRecord;

/**
 * What a worker is told to load: its layer range of the model, fenced by the assignment's epoch and the
 * leader's Raft term (a worker refuses older terms).
 *
 * @param keptSinceEpoch the first epoch from which the node has held this very stage in every assignment up to this
 *                       one (this epoch when the stage is new to it): a worker that holds the stage loaded for that
 *                       epoch or a later one keeps it, and every sequence's KV cache, without loading anything
 */
public record Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead,
                         long epoch, long term, long keptSinceEpoch) {

    /** The assignment {@code node} holds in the current epoch of {@code state}, sent with {@code term}. */
    static Assignment current(ClusterState state, NodeRecord node, long term) {
        return new Assignment(state.modelId(), node.layerStart(), node.layerEnd(), node.hasEmbedding(),
                node.hasHead(), state.epoch(), term, state.stageKeptSince(node.info().nodeId()));
    }
}
