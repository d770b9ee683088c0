package io.butterfly.worker.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.proto.worker.v1.ExpertGroup;
import io.butterfly.worker.engine.ExpertPlacement;
import io.butterfly.worker.partition.Assignment;
import org.junit.jupiter.api.Test;

/** An assignment's expert groups, as the coordinator would send them, become the partition's expert placement. */
class ExpertGroupMessagesTest {

    private static AssignPartitionRequest.Builder request() {
        return AssignPartitionRequest.newBuilder().setModelId("m").setLayers(LayerRange.newBuilder().setStart(0).setEnd(2))
                .setEpoch(3).setTerm(1)
                .setRegistry(Endpoint.newBuilder().setNodeId("registry").setHost("r").setGrpcPort(1))
                .setCoordinator(Endpoint.newBuilder().setNodeId("c").setHost("c").setGrpcPort(2));
    }

    private static ExpertGroup group(String node, int port, int first, int end) {
        return ExpertGroup.newBuilder().setNode(Endpoint.newBuilder().setNodeId(node).setHost("h-" + node).setGrpcPort(port))
                .setFirstExpert(first).setEndExpert(end).build();
    }

    @Test
    void expertGroupsBecomeThePlacement() {
        Assignment a = WorkerMessages.assignment(request().addExpertGroups(group("w1", 9001, 0, 3))
                .addExpertGroups(group("w2", 9002, 3, 6)).addExpertGroups(group("w3", 9003, 6, 8)).setExpertGroup(2).build());
        ExpertPlacement p = a.expertPlacement(8);
        assertThat(p.groups()).containsExactly(new ExpertPlacement.Group("w1", "h-w1", 9001, 0, 3),
                new ExpertPlacement.Group("w2", "h-w2", 9002, 3, 6), new ExpertPlacement.Group("w3", "h-w3", 9003, 6, 8));
        assertThat(p.expertsOnly()).isTrue();
        assertThat(p.own().nodeId()).isEqualTo("w3");
        Assignment stage = WorkerMessages.assignment(request().addExpertGroups(group("w1", 9001, 0, 3))
                .addExpertGroups(group("w2", 9002, 3, 8)).build());
        assertThat(stage.expertPlacement(8).expertsOnly()).isFalse();
        assertThat(WorkerMessages.assignment(request().build()).expertPlacement(8)).as("no groups: all experts here").isNull();
    }

    @Test
    void groupsThatDoNotCoverTheExpertsInOrderAreRefused() {
        Assignment gap = WorkerMessages.assignment(request().addExpertGroups(group("w1", 1, 0, 3))
                .addExpertGroups(group("w2", 2, 4, 8)).build());
        assertThatThrownBy(() -> gap.expertPlacement(8)).hasMessageContaining("starts at expert 4, expected 3");
        Assignment short_ = WorkerMessages.assignment(request().addExpertGroups(group("w1", 1, 0, 3)).build());
        assertThatThrownBy(() -> short_.expertPlacement(8)).hasMessageContaining("end at 3, the model has 8");
        Assignment outside = WorkerMessages.assignment(request().addExpertGroups(group("w1", 1, 0, 8)).setExpertGroup(1).build());
        assertThatThrownBy(() -> outside.expertPlacement(8)).hasMessageContaining("this partition's among them");
    }
}
