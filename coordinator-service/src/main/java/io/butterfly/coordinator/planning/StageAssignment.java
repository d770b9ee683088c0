package io.butterfly.coordinator.planning;

import java.util.List;
import java.util.stream.Stream;

/**
 * One pipeline stage: a worker and its contiguous half-open layer range {@code [layerStart, layerEnd)}, and, when the
 * stage's routed experts are spread over workers, its expert groups.
 *
 * @param nodeId       worker running the stage
 * @param layerStart   first layer (inclusive)
 * @param layerEnd     last layer (exclusive)
 * @param hasEmbedding whether the stage holds the token embedding (the first stage)
 * @param hasHead      whether the stage holds the final norm and LM head (the last stage)
 * @param expertGroups the stage's expert groups in expert order (also the reduction tree's order): group 0 on
 *                     {@code nodeId}, the ranges contiguous from expert 0; empty when the stage holds all its experts
 */
public record StageAssignment(String nodeId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead,
                              List<ExpertGroup> expertGroups) {

    public StageAssignment {
        if (nodeId == null || nodeId.isBlank()) {
            throw new IllegalArgumentException("nodeId must not be blank");
        }
        if (layerStart < 0 || layerEnd <= layerStart) {
            throw new IllegalArgumentException("invalid layer range [" + layerStart + ", " + layerEnd + ") for " + nodeId);
        }
        expertGroups = expertGroups == null ? List.of() : List.copyOf(expertGroups); // null: a snapshot from before
        if (!expertGroups.isEmpty()) {
            if (expertGroups.size() < 2) {
                throw new IllegalArgumentException("a stage's experts spread over one group are not spread (" + nodeId + ")");
            }
            if (!expertGroups.get(0).nodeId().equals(nodeId)) {
                throw new IllegalArgumentException("expert group 0 of stage " + nodeId + " is on "
                        + expertGroups.get(0).nodeId() + ", not on the stage's worker");
            }
            int next = 0;
            for (ExpertGroup g : expertGroups) {
                if (g.firstExpert() != next) {
                    throw new IllegalArgumentException("expert groups of stage " + nodeId + " do not cover the experts in"
                            + " order: [" + g.firstExpert() + ", " + g.endExpert() + ") where " + next + " was next");
                }
                next = g.endExpert();
            }
            if (expertGroups.stream().map(ExpertGroup::nodeId).distinct().count() != expertGroups.size()) {
                throw new IllegalArgumentException("a worker holds two expert groups of stage " + nodeId);
            }
        }
    }

    /** A stage holding all of its experts. */
    public StageAssignment(String nodeId, int layerStart, int layerEnd, boolean hasEmbedding, boolean hasHead) {
        this(nodeId, layerStart, layerEnd, hasEmbedding, hasHead, List.of());
    }

    /** Number of transformer layers in this stage. */
    public int numLayers() {
        return layerEnd - layerStart;
    }

    /** The workers holding expert groups besides the stage's own (groups 1..n-1), in group order. */
    public List<String> expertHolders() {
        return expertGroups.stream().skip(1).map(ExpertGroup::nodeId).toList();
    }

    /** The stage's worker, then its expert holders. */
    public List<String> holders() {
        return Stream.concat(Stream.of(nodeId), expertHolders().stream()).toList();
    }

    /** The group {@code node} holds in this stage, or -1. */
    public int groupOf(String node) {
        for (int i = 0; i < expertGroups.size(); i++) {
            if (expertGroups.get(i).nodeId().equals(node)) {
                return i;
            }
        }
        return -1;
    }

    /** This stage with its experts all on its own worker. */
    public StageAssignment withoutExpertGroups() {
        return new StageAssignment(nodeId, layerStart, layerEnd, hasEmbedding, hasHead);
    }
}
