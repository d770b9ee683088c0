package io.butterfly.worker.partition;

import io.butterfly.worker.cluster.Endpoint;
import java.util.List;

/**
 * The coordinator's decision: this worker holds layers {@code [layerStart, layerEnd)} of a model.
 *
 * @param hasEmbedding        first stage: also the token embeddings
 * @param hasHead             last stage: also the final norm and LM head
 * @param epoch               fencing token: an assignment older than the newest seen is refused
 * @param term                Raft term of the coordinator leader that made it: a second fencing token, so a deposed
 *                            leader's assignment is refused even if its epoch looks new
 * @param registry            where the model's files are fetched
 * @param coordinator         where load progress and completion are reported
 * @param coordinatorReplicas every coordinator replica (the one above included), all heartbeated to, so whichever
 *                            becomes leader already has the heartbeat history its failure detector needs
 */
public record Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead,
                         long epoch, long term, Endpoint registry, Endpoint coordinator,
                         List<Endpoint> coordinatorReplicas) {

    public Assignment {
        coordinatorReplicas = List.copyOf(coordinatorReplicas);
    }

    /** Same partition of the same epoch, whichever coordinator leader (term) sends it. */
    boolean samePartitionAs(Assignment other) {
        return other != null && modelId.equals(other.modelId) && layerStart == other.layerStart
                && layerEnd == other.layerEnd && hasEmbedding == other.hasEmbedding && hasHead == other.hasHead
                && epoch == other.epoch && registry.equals(other.registry);
    }
}
