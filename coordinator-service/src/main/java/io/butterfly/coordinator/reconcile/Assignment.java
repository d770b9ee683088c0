package io.butterfly.coordinator.reconcile;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.planning.StageAssignment;
import java.util.List;

/**
 * What a worker is told to load: its layer range of the model, fenced by the assignment's epoch and the
 * leader's Raft term (a worker refuses older terms).
 *
 * @param keptSinceEpoch the first epoch from which the node has held this very stage in every assignment up to this
 *                       one (this epoch when the stage is new to it): a worker that holds the stage loaded for that
 *                       epoch or a later one keeps it, and every sequence's KV cache, without loading anything
 * @param expertGroups   the stage's expert groups in order when its experts are spread over workers, else empty
 * @param expertGroup    this worker's group among them (0: the stage's own worker; later: its experts only)
 * @param stepsSinceEpoch the first epoch whose steps the worker runs ({@link ClusterState#stepsEpoch}): the epoch its
 *                        pipeline has been the same since when there are several, else this one
 * @param audit          a spare's copy of a serving stage for step audits, outside the plan: the worker reports no
 *                       load progress for it ({@link #forAudit})
 */
public record Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead,
                         long epoch, long term, long keptSinceEpoch, List<Group> expertGroups, int expertGroup,
                         long stepsSinceEpoch, boolean audit) {

    /** An expert group as a worker reaches it: its worker and its experts {@code [first, end)}. */
    public record Group(NodeInfo node, int firstExpert, int endExpert) {
    }

    public Assignment {
        expertGroups = expertGroups == null ? List.of() : List.copyOf(expertGroups);
    }

    /** A stage of the plan. */
    public Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead,
                      long epoch, long term, long keptSinceEpoch, List<Group> expertGroups, int expertGroup,
                      long stepsSinceEpoch) {
        this(modelId, layerStart, layerEnd, hasEmbedding, hasHead, epoch, term, keptSinceEpoch, expertGroups,
                expertGroup, stepsSinceEpoch, false);
    }

    /**
     * This stage as a spare's copy for step audits: outside the plan, so the spare reports no load progress (the
     * control log would refuse every report of a node the plan does not name, each after a commit).
     */
    public Assignment forAudit() {
        return new Assignment(modelId, layerStart, layerEnd, hasEmbedding, hasHead, epoch, term, keptSinceEpoch,
                expertGroups, expertGroup, stepsSinceEpoch, true);
    }

    /** A stage holding all of its experts. */
    public Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead,
                      long epoch, long term, long keptSinceEpoch) {
        this(modelId, layerStart, layerEnd, hasEmbedding, hasHead, epoch, term, keptSinceEpoch, List.of(), 0, epoch);
    }

    /** The assignment {@code node} holds in the current epoch of {@code state}, sent with {@code term}. */
    static Assignment current(ClusterState state, NodeRecord node, long term) {
        String id = node.info().nodeId();
        StageAssignment stage = state.plan(state.epoch()).flatMap(p -> p.partOf(id)).orElse(null);
        List<Group> groups = stage == null ? List.of() : stage.expertGroups().stream()
                .map(g -> new Group(state.nodes().get(g.nodeId()).info(), g.firstExpert(), g.endExpert())).toList();
        return new Assignment(state.modelId(), node.layerStart(), node.layerEnd(), node.hasEmbedding(),
                node.hasHead(), state.epoch(), term, state.stageKeptSince(id), groups,
                stage == null ? 0 : Math.max(0, stage.groupOf(id)), state.stepsEpochOf(id));
    }
}
