package io.butterfly.coordinator.raft;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import java.nio.file.Path;
import org.apache.ratis.util.LifeCycle;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The lifecycle Ratis requires of a state machine on a follower that installs the leader's snapshot: it pauses the
 * machine, writes the snapshot into its storage and reloads the machine only from PAUSED (StateMachineUpdater#reload
 * asserts it, and closes the replica otherwise). A Ratis-default pause that leaves the machine RUNNING killed such
 * a follower.
 */
class ControlStateMachineLifecycleIT {

    @Test
    void aPausedMachineReloadsTheLatestSnapshotAndRunsOn(@TempDir Path dir) throws Exception {
        try (ControlReplica replica = TestReplicas.single(dir)) {
            ControlStateMachine machine = replica.stateMachine();
            assertThat(machine.getLifeCycleState()).isEqualTo(LifeCycle.State.RUNNING);
            replica.submit(new ClusterCommand.Bootstrap("m", 2, 1));
            machine.takeSnapshot(); // what a leader would ship: the state after Bootstrap
            replica.submit(new ClusterCommand.NodeJoined(new NodeInfo("w1", "worker", "h", 1, 2, 4, 1L << 30, 1.0,
                    "cpu"), 2));
            assertThat(machine.state().nodes()).containsKey("w1");

            machine.pause();
            assertThat(machine.getLifeCycleState()).isEqualTo(LifeCycle.State.PAUSED);
            machine.reinitialize();

            assertThat(machine.getLifeCycleState()).isEqualTo(LifeCycle.State.RUNNING);
            assertThat(machine.state().nodes()).isEmpty(); // the snapshot's state, not the entry applied after it
            assertThat(machine.state().modelId()).isEqualTo("m");
            machine.pause();
            assertThat(machine.getLifeCycleState()).isEqualTo(LifeCycle.State.PAUSED); // and again, next time
            machine.reinitialize();
            assertThat(machine.getLifeCycleState()).isEqualTo(LifeCycle.State.RUNNING);
        }
    }
}
