package io.butterfly.coordinator.cluster;

import static io.butterfly.coordinator.cluster.Fixtures.info;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.SystemState;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the replicated state keeps of re-plans: the plans of recent epochs and which stages they kept, the recovery
 * from a lost stage and its phase, drains and departures, each through the reducer.
 */
class ReplanCommandsTest {

    private static final StageAssignment W1 = new StageAssignment("w1", 0, 2, true, false);
    private static final StageAssignment W2 = new StageAssignment("w2", 2, 4, false, true);

    /** READY on w1, w2 in epoch 1, with w3 joined as a spare. */
    private static Fixtures readyWithSpare() {
        return Fixtures.ready().apply(new ClusterCommand.NodeJoined(info("w3"), 9));
    }

    private static Fixtures failed(Fixtures f, String node, long atMs) {
        return f.apply(new ClusterCommand.NodeSuspected(node, atMs, 5, "closed", atMs))
                .apply(new ClusterCommand.NodeFailed(node, atMs, 9, "closed", atMs));
    }

    @Test
    void thePlansOfRecentEpochsTellWhichStagesKeptTheirRange() {
        Fixtures f = readyWithSpare();
        StageAssignment w3 = new StageAssignment("w3", 2, 4, false, true);
        f.apply(new ClusterCommand.PartitionsAssigned(2, List.of(W1, w3), "w2 FAILED: spare w3 takes [2, 4) of w2", 20));
        f.apply(new ClusterCommand.PartitionsAssigned(3, List.of(W1, w3), "", 21));
        f.apply(new ClusterCommand.PartitionsAssigned(4, List.of(new StageAssignment("w1", 0, 4, true, true)), "", 22));
        ClusterState s = f.state();

        assertThat(s.plans()).extracting(EpochPlan::epoch).containsExactly(1L, 2L, 3L, 4L);
        assertThat(s.plan(2).orElseThrow().reason()).isEqualTo("w2 FAILED: spare w3 takes [2, 4) of w2");
        assertThat(s.keptStages(1, 2)).containsExactly("w1");
        assertThat(s.keptStages(2, 3)).containsExactly("w1", "w3");
        assertThat(s.keptStages(1, 3)).containsExactly("w1");
        assertThat(s.keptStages(3, 4)).isEmpty(); // w1's range grew
        assertThat(s.stageKeptSince("w1")).isEqualTo(4);
        assertThat(s.stages()).containsExactly(new StageAssignment("w1", 0, 4, true, true));
        assertThat(s.stageKeptSince("w3")).isZero(); // no stage now

        for (long e = 5; e < 5 + ClusterState.MAX_PLANS; e++) {
            f.apply(new ClusterCommand.PartitionsAssigned(e, List.of(new StageAssignment("w1", 0, 4, true, true)), "",
                    30 + e));
        }
        assertThat(f.state().plans()).hasSize(ClusterState.MAX_PLANS);
        assertThat(f.state().stageKeptSince("w1")).isEqualTo(5); // as far back as the kept plans go
        assertThat(f.state().keptStages(1, 6)).as("epoch 1's plan is no longer held").isEmpty();
    }

    @Test
    void aLostStageBeginsARecoveryWhosePhaseFollowsTheStateUntilReadyEndsIt() {
        Fixtures f = failed(readyWithSpare(), "w2", 100);
        ClusterState s = f.state();
        assertThat(s.system()).isEqualTo(SystemState.DEGRADED);
        assertThat(s.lostStages()).containsExactly("w2");
        assertThat(s.spares()).containsExactly("w3");
        assertThat(s.recovery()).isEqualTo(new Recovery(100, 1, s.recovery().cause(), List.of("w2"), 0, 0));
        assertThat(s.recovery().cause()).contains("'w2' FAILED");
        assertThat(s.recoveryPhase()).isEqualTo(RecoveryPhase.REPLANNING);
        assertThat(s.servesOrRecovers()).as("recovering: a coordinator stays ready").isTrue();

        f.apply(new ClusterCommand.FeasibilityAssessed(new Feasibility("optimal", false, 400, 250,
                "InsufficientResources: the model needs 400 bytes, the 1 workers have 250 bytes", 101), 101));
        assertThat(f.state().recoveryPhase()).isEqualTo(RecoveryPhase.WAITING_FOR_CAPACITY);
        assertThat(f.state().recoveryPhase().recovering()).isFalse();
        assertThat(f.state().servesOrRecovers()).as("cannot recover by itself: not ready").isFalse();

        f.apply(new ClusterCommand.PartitionsAssigned(2, List.of(W1, new StageAssignment("w3", 2, 4, false, true)),
                "w2 FAILED: spare w3 takes [2, 4) of w2", 102));
        assertThat(f.state().recoveryPhase()).isEqualTo(RecoveryPhase.LOADING);
        assertThat(f.state().servesOrRecovers()).isTrue();
        assertThat(f.state().spares()).isEmpty();
        failed(f, "w1", 103); // a second loss while recovering counts in the same recovery
        assertThat(f.state().recovery().lostNodes()).containsExactly("w2", "w1");
        assertThat(f.state().recovery().startedAtMs()).isEqualTo(100);

        f.apply(new ClusterCommand.NodeRecovered("w1", false, 104, 104));
        f.apply(new ClusterCommand.LoadCompleted("w1", 2, "c1", 105));
        f.apply(new ClusterCommand.LoadCompleted("w3", 2, "c3", 106));
        assertThat(f.state().recoveryPhase()).isEqualTo(RecoveryPhase.VALIDATING);
        assertThat(f.state().servesOrRecovers()).isTrue();
        f.apply(Fixtures.validated(2, 107));
        ClusterState ready = f.state();
        assertThat(ready.system()).isEqualTo(SystemState.READY);
        assertThat(ready.recoveryPhase()).isNull();
        assertThat(ready.servesOrRecovers()).isTrue();
        assertThat(ready.recovery()).isEqualTo(new Recovery(100, 1, s.recovery().cause(), List.of("w2", "w1"), 107, 2));
    }

    @Test
    void aLoadFailingForGoodStallsTheRecovery() {
        Fixtures f = Fixtures.ready().apply(new ClusterCommand.LoadFailed("w1", 1, "CHECKSUM_MISMATCH", "layer 0", 20));
        assertThat(f.state().system()).isEqualTo(SystemState.DEGRADED);
        assertThat(f.state().recoveryPhase()).isEqualTo(RecoveryPhase.STALLED);
        assertThat(f.state().servesOrRecovers()).as("an operator must act: not ready").isFalse();
    }

    @Test
    void aDrainIsRecordedOnceAndRefusedWhenNoOtherWorkerCouldServe() {
        Fixtures f = readyWithSpare().apply(new ClusterCommand.NodeDrainRequested("w2", 20));
        assertThat(f.state().draining()).containsExactly("w2");
        assertThat(f.state().lostStages()).containsExactly("w2");
        assertThat(f.state().system()).as("it serves until the re-plan").isEqualTo(SystemState.READY);
        assertThatThrownBy(() -> f.copy().apply(new ClusterCommand.NodeDrainRequested("w2", 21)))
                .hasMessageContaining("draining already");
        assertThatThrownBy(() -> f.copy().apply(new ClusterCommand.NodeDrainRequested("w9", 21)))
                .hasMessageContaining("no node 'w9'");
        assertThatThrownBy(() -> f.copy().apply(new ClusterCommand.PartitionsAssigned(2,
                List.of(new StageAssignment("w2", 0, 4, true, true)), 22))).hasMessageContaining("draining");

        Fixtures alone = Fixtures.ready().apply(new ClusterCommand.NodeDrainRequested("w1", 20));
        assertThatThrownBy(() -> alone.apply(new ClusterCommand.NodeDrainRequested("w2", 21)))
                .hasMessageContaining("would leave no worker to serve");
    }

    @Test
    void onlyANodeHoldingNoStageLeaves() {
        Fixtures f = readyWithSpare().apply(new ClusterCommand.NodeDrainRequested("w2", 20));
        assertThatThrownBy(() -> f.copy().apply(new ClusterCommand.NodeLeft("w2", "drained", 21)))
                .hasMessageContaining("holds a stage of epoch 1");
        f.apply(new ClusterCommand.PartitionsAssigned(2, List.of(W1, new StageAssignment("w3", 2, 4, false, true)),
                "w2 drained", 21));
        f.apply(new ClusterCommand.NodeLeft("w2", "drained", 22));
        assertThat(f.state().nodes()).doesNotContainKey("w2");
        assertThat(f.state().draining()).isEmpty();
        assertThat(f.state().recovery().cause()).isEqualTo("w2 drained");
    }
}
