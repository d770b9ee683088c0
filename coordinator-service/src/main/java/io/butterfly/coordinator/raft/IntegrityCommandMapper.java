package io.butterfly.coordinator.raft;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.Feasibility;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.proto.coordinator.v1.ControlCommand;
import io.butterfly.proto.coordinator.v1.FeasibilityAssessedCommand;
import io.butterfly.proto.coordinator.v1.WeightsValidatedCommand;

/**
 * Log encoding of the model-integrity commands (feasibility check, weight cross-validation); kept apart
 * from {@link ControlCommandMapper}, which delegates here. The records' own timestamps are the command's.
 */
final class IntegrityCommandMapper {

    private IntegrityCommandMapper() {
    }

    /** Sets the command on {@code b}; false if {@code command} is not an integrity command. */
    static boolean toProto(ClusterCommand command, ControlCommand.Builder b) {
        if (command instanceof ClusterCommand.FeasibilityAssessed c) {
            Feasibility f = c.feasibility();
            FeasibilityAssessedCommand.Builder p = FeasibilityAssessedCommand.newBuilder().setFeasible(f.feasible())
                    .setRequiredBytes(f.requiredBytes()).setAvailableBytes(f.availableBytes());
            if (f.planner() != null) {
                p.setPlanner(f.planner());
            }
            if (f.reason() != null) {
                p.setReason(f.reason());
            }
            b.setFeasibilityAssessed(p);
            return true;
        }
        if (command instanceof ClusterCommand.WeightsValidated c) {
            WeightValidation v = c.validation();
            WeightsValidatedCommand.Builder p = WeightsValidatedCommand.newBuilder().setEpoch(v.epoch())
                    .setStatus(v.status().name()).addAllValidatedNodes(v.validatedNodes())
                    .addAllFailedNodes(v.failedNodes()).addAllProblems(v.problems());
            if (v.merkleRoot() != null) {
                p.setMerkleRoot(v.merkleRoot());
            }
            if (v.partitionRoot() != null) {
                p.setPartitionRoot(v.partitionRoot());
            }
            b.setWeightsValidated(p);
            return true;
        }
        return false;
    }

    /** The integrity command in {@code proto}, or null if it holds another command. */
    static ClusterCommand fromProto(ControlCommand proto) {
        long at = proto.getAtMs();
        if (proto.hasFeasibilityAssessed()) {
            FeasibilityAssessedCommand c = proto.getFeasibilityAssessed();
            return new ClusterCommand.FeasibilityAssessed(new Feasibility(c.hasPlanner() ? c.getPlanner() : null,
                    c.getFeasible(), c.getRequiredBytes(), c.getAvailableBytes(), c.hasReason() ? c.getReason() : null,
                    at), at);
        }
        if (proto.hasWeightsValidated()) {
            WeightsValidatedCommand c = proto.getWeightsValidated();
            return new ClusterCommand.WeightsValidated(new WeightValidation(c.getEpoch(),
                    WeightValidation.Status.valueOf(c.getStatus()), c.hasMerkleRoot() ? c.getMerkleRoot() : null,
                    c.hasPartitionRoot() ? c.getPartitionRoot() : null, c.getValidatedNodesList(),
                    c.getFailedNodesList(), c.getProblemsList(), at), at);
        }
        return null;
    }
}
