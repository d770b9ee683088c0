package io.butterfly.coordinator.reconcile;

import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.planning.ModelFootprint;
import java.util.List;
import java.util.Map;

/**
 * What the leader knows besides the replicated state, at one instant: plain values, so that {@link Reconciler} is a
 * function of them.
 *
 * @param nowMs    the time (Unix epoch milliseconds)
 * @param term     the Raft term this replica leads: every assignment carries it
 * @param model    the served model as this replica fetched and verified it, or null while it has not
 * @param members  the workers discovery lists, or null when discovery could not be asked
 * @param attempts what became of each action's attempts (by key) while this replica leads
 */
public record Observations(long nowMs, long term, ModelView model, List<NodeInfo> members,
                           Map<String, Attempts> attempts) {

    /**
     * The served model as planning needs it.
     *
     * @param footprint its memory need per layer and stage, as the workers would hold it
     * @param experts   its routed experts, for spreading them in expert groups (none for a dense model)
     * @param headSlices the slices a layer splits into by heads (its key/value heads) for a dense Llama-family
     *                   model, 0 for a model head parallelism does not compute (docs/sharding.md)
     */
    public record ModelView(String modelId, String merkleRoot, ModelFootprint footprint,
                            io.butterfly.coordinator.planning.ExpertFootprint experts, int headSlices) {

        public ModelView(String modelId, String merkleRoot, ModelFootprint footprint,
                         io.butterfly.coordinator.planning.ExpertFootprint experts) {
            this(modelId, merkleRoot, footprint, experts, 0);
        }

        public ModelView {
            experts = experts == null ? io.butterfly.coordinator.planning.ExpertFootprint.none() : experts;
        }

        /** A dense model. */
        public ModelView(String modelId, String merkleRoot, ModelFootprint footprint) {
            this(modelId, merkleRoot, footprint, null);
        }
    }

    public Observations {
        members = members == null ? null : List.copyOf(members);
        attempts = Map.copyOf(attempts);
    }

    Attempts attempts(String key) {
        return attempts.getOrDefault(key, Attempts.NONE);
    }
}
