package io.butterfly.worker.partition;

import io.butterfly.common.tensor.SliceTree;
import io.butterfly.worker.engine.ExpertPlacement;
import io.butterfly.worker.engine.HeadPlacement;
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
 * @param keptSinceEpoch      the first epoch from which this worker has held this very stage in every assignment up to
 *                            this one (0: not known): a stage loaded for that epoch or a later one is kept with its KV
 *                            caches, one loaded before keeps its weights but not its caches
 * @param expertGroups        the stage's expert groups in order when its experts are spread over workers, else empty
 * @param expertGroup         this worker's group among them (0: the stage's own worker; later: experts only)
 * @param stepsSinceEpoch     the first epoch from which this worker's whole pipeline has been the same in every
 *                            assignment up to this one: steps of any epoch from it up to this one are of this very
 *                            pipeline and run here (0: this epoch only)
 * @param audit               a spare's copy of a serving stage for step audits, outside the plan: loaded and served as
 *                            any, but no load progress is reported for it (the control log has no place for it)
 */
public record Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead,
                         long epoch, long term, Endpoint registry, Endpoint coordinator,
                         List<Endpoint> coordinatorReplicas, long keptSinceEpoch,
                         List<ExpertPlacement.Group> expertGroups, int expertGroup, long stepsSinceEpoch,
                         boolean audit) {

    public Assignment {
        coordinatorReplicas = List.copyOf(coordinatorReplicas);
        expertGroups = expertGroups == null ? List.of() : List.copyOf(expertGroups);
    }

    /** A stage of the plan. */
    public Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead, long epoch,
                      long term, Endpoint registry, Endpoint coordinator, List<Endpoint> coordinatorReplicas,
                      long keptSinceEpoch, List<ExpertPlacement.Group> expertGroups, int expertGroup,
                      long stepsSinceEpoch) {
        this(modelId, layerStart, layerEnd, hasEmbedding, hasHead, epoch, term, registry, coordinator,
                coordinatorReplicas, keptSinceEpoch, expertGroups, expertGroup, stepsSinceEpoch, false);
    }

    /** Steps of this epoch only. */
    public Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead, long epoch,
                      long term, Endpoint registry, Endpoint coordinator, List<Endpoint> coordinatorReplicas,
                      long keptSinceEpoch, List<ExpertPlacement.Group> expertGroups, int expertGroup) {
        this(modelId, layerStart, layerEnd, hasEmbedding, hasHead, epoch, term, registry, coordinator,
                coordinatorReplicas, keptSinceEpoch, expertGroups, expertGroup, 0);
    }

    /** All of the stage's experts here. */
    public Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead, long epoch,
                      long term, Endpoint registry, Endpoint coordinator, List<Endpoint> coordinatorReplicas,
                      long keptSinceEpoch) {
        this(modelId, layerStart, layerEnd, hasEmbedding, hasHead, epoch, term, registry, coordinator,
                coordinatorReplicas, keptSinceEpoch, List.of(), 0);
    }

    /** The placement of the stage's experts over the model's {@code experts} (null: all here). */
    public ExpertPlacement expertPlacement(int experts) {
        return expertGroups.isEmpty() ? null : new ExpertPlacement(expertGroups, expertGroup, experts);
    }

    /**
     * For a dense model, its groups are the stage's head shards, each a range of slices of the layers' slice tree
     * (docs/sharding.md, "Head parallelism"); null: its layers are whole here.
     */
    public HeadPlacement headPlacement() {
        return expertGroups.isEmpty() ? null : new HeadPlacement(expertGroups.stream()
                .map(g -> new HeadPlacement.Holder(g.nodeId(), g.host(), g.port(), new SliceTree.Range(g.first(), g.end())))
                .toList(), expertGroup);
    }

    /** Without {@code keptSinceEpoch} (not known: every new epoch is loaded anew). */
    public Assignment(String modelId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead, long epoch,
                      long term, Endpoint registry, Endpoint coordinator, List<Endpoint> coordinatorReplicas) {
        this(modelId, layerStart, layerEnd, hasEmbedding, hasHead, epoch, term, registry, coordinator,
                coordinatorReplicas, 0);
    }

    /** Same partition of the same epoch, whichever coordinator leader (term) sends it. */
    boolean samePartitionAs(Assignment other) {
        return sameStageAs(other) && epoch == other.epoch;
    }

    /** The same stage (model, layers, embedding, head, from the same registry), whatever the epoch. */
    boolean sameStageAs(Assignment other) {
        return other != null && modelId.equals(other.modelId) && layerStart == other.layerStart
                && layerEnd == other.layerEnd && hasEmbedding == other.hasEmbedding && hasHead == other.hasHead
                && registry.equals(other.registry) && expertGroups.equals(other.expertGroups)
                && expertGroup == other.expertGroup;
    }
}
