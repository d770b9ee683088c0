package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.SystemState;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** A control log that served READY through real commands: workers w1 (layers [0, 2)) and w2 ([2, 4)), epoch 1. */
public final class ReadyCluster {

    private ReadyCluster() {
    }

    public static void bootstrap(ControlLog control) {
        control.submit(new ClusterCommand.Bootstrap("tiny", 2, 1));
        control.submit(new ClusterCommand.ModelResolved("tiny", "root", 2));
        control.submit(new ClusterCommand.NodeJoined(worker("w1"), 3));
        control.submit(new ClusterCommand.NodeJoined(worker("w2"), 4));
        control.submit(new ClusterCommand.PartitionsAssigned(1, List.of(new StageAssignment("w1", 0, 2, true, false),
                new StageAssignment("w2", 2, 4, false, true)), 5));
        control.submit(new ClusterCommand.LoadCompleted("w1", 1, "c1", 6));
        control.submit(new ClusterCommand.LoadCompleted("w2", 1, "c2", 7));
        control.submit(new ClusterCommand.WeightsValidated(new WeightValidation(1, WeightValidation.Status.VALID, "root",
                "partition-root", List.of("w1", "w2"), List.of(), List.of(), 8), 8));
        assertThat(control.state().system()).isEqualTo(SystemState.READY);
    }

    /** A coordinator replica's settings for the tiny model on two workers (120 s steps, 30 min task timeout). */
    public static CoordinatorProperties props(String nodeId) {
        return new CoordinatorProperties(nodeId, "127.0.0.1", "butterfly", "tiny", 2, "127.0.0.1", 9082, "127.0.0.1",
                9081, Path.of("/tmp/unused"), 1024, 4096, 65536, 120, Duration.ofMinutes(30), List.of(), 1024);
    }

    static NodeInfo worker(String id) {
        return new NodeInfo(id, "worker", "host-" + id, 9000, 8000, 4, 8L << 30, 12.5, "cpu");
    }
}
