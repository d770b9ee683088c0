package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.planning.StageAssignment;
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

    /** The stage {@code nodeId} holds in this epoch, if any. */
    public Optional<StageAssignment> stageOf(String nodeId) {
        return stages.stream().filter(s -> s.nodeId().equals(nodeId)).findFirst();
    }

    /** The stage {@code nodeId} holds a part of in this epoch (as its worker or an expert group), if any. */
    public Optional<StageAssignment> partOf(String nodeId) {
        return stages.stream().filter(s -> s.holders().contains(nodeId)).findFirst();
    }
}
