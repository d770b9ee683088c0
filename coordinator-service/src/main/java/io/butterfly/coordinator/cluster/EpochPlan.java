package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.planning.StageAssignment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * One committed assignment: the stages of an epoch in pipeline order, and why it was made.
 *
 * @param reason what the leader planned it for (the bootstrap, a lost stage, a drain), for the state and the log
 */
public record EpochPlan(long epoch, List<StageAssignment> stages, String reason, long atMs) {

    public EpochPlan {
        stages = List.copyOf(stages);
        reason = Objects.requireNonNullElse(reason, "");
    }

    /** This assignment's pipelines (issue #52), each its stages in order (see {@link #split}). */
    public List<List<StageAssignment>> pipelines() {
        return split(stages);
    }

    /**
     * The pipelines of an assignment's stages: several pipelines are committed as their stages one pipeline after the
     * other, so each starts at a stage holding the embedding (a pipeline's first stage, and no other, does). One
     * pipeline for a plan of one; none for no stages.
     */
    public static List<List<StageAssignment>> split(List<StageAssignment> stages) {
        List<List<StageAssignment>> out = new ArrayList<>();
        List<StageAssignment> current = null;
        for (StageAssignment s : stages) {
            if (current == null || s.hasEmbedding()) {
                current = new ArrayList<>();
                out.add(current);
            }
            current.add(s);
        }
        return out.stream().map(List::copyOf).toList();
    }

    /** The stage {@code nodeId} holds in this epoch, if any. */
    public Optional<StageAssignment> stageOf(String nodeId) {
        return stages.stream().filter(s -> s.nodeId().equals(nodeId)).findFirst();
    }

    /** The stage {@code nodeId} holds a part of in this epoch (as its worker or an expert group), if any. */
    public Optional<StageAssignment> partOf(String nodeId) {
        return stages.stream().filter(s -> s.holders().contains(nodeId)).findFirst();
    }
}
