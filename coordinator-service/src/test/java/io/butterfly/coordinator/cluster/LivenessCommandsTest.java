package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import org.junit.jupiter.api.Test;

/** The failure-detector commands: legal transitions only, timestamps recorded, system state follows. */
class LivenessCommandsTest {

    private static void refused(Fixtures f, ClusterCommand c) {
        ClusterState before = f.state();
        assertThrows(IllegalTransitionException.class, () -> ClusterReducer.apply(before, c, f.nextIndex()));
        assertEquals(before, f.state());
    }

    private static ClusterCommand.NodeSuspected suspect(String id, long at) {
        return new ClusterCommand.NodeSuspected(id, at - 500, 4.2, "no heartbeat for 500 ms", at);
    }

    private static ClusterCommand.NodeFailed fail(String id, long at) {
        return new ClusterCommand.NodeFailed(id, at - 1400, 8.1, "no heartbeat for 1400 ms", at);
    }

    @Test
    void nodeSuspectedMovesJoinedOrReadyToSuspectAndKeepsTheSystemServing() {
        Fixtures f = Fixtures.ready().apply(suspect("w1", 100));
        NodeRecord n = f.state().nodes().get("w1");
        assertEquals(WorkerState.SUSPECT, n.state());
        assertEquals(WorkerState.READY, n.health().resumeState());
        assertEquals(100, n.health().suspectedAtMs());
        assertEquals(100 - 500, n.health().lastHeartbeatMs());
        assertEquals(SystemState.READY, f.state().system(), "suspicion alone does not degrade the system");
        assertEquals(PartitionState.READY, n.partition());
        refused(f, suspect("w1", 101)); // already SUSPECT
        refused(f, suspect("nobody", 102));
        Fixtures joined = Fixtures.joined().apply(suspect("w2", 50));
        assertEquals(WorkerState.JOINED, joined.state().nodes().get("w2").health().resumeState());
    }

    @Test
    void nodeSuspicionClearedRestoresThePreviousState() {
        Fixtures f = Fixtures.ready().apply(suspect("w1", 100))
                .apply(new ClusterCommand.NodeSuspicionCleared("w1", 150, 160));
        NodeRecord n = f.state().nodes().get("w1");
        assertEquals(WorkerState.READY, n.state());
        assertNull(n.health().resumeState());
        assertEquals(150, n.health().lastHeartbeatMs());
        assertEquals(100, n.health().suspectedAtMs(), "the suspicion stays on record");
        refused(f, new ClusterCommand.NodeSuspicionCleared("w1", 170, 170)); // not SUSPECT any more
    }

    @Test
    void loadReportsWhileSuspectChangeTheResumeStateNotTheSuspicion() {
        // Suspected while loading: its load reports still count, but only the detector lifts the suspicion.
        Fixtures f = Fixtures.assigned().apply(suspect("w1", 10))
                .apply(new ClusterCommand.LoadProgressed("w1", 1, PartitionState.DOWNLOADING, 0.5, "layer-0", 11))
                .apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", 12));
        NodeRecord n = f.state().nodes().get("w1");
        assertEquals(WorkerState.SUSPECT, n.state());
        assertEquals(PartitionState.READY, n.partition());
        assertEquals(WorkerState.READY, n.health().resumeState());
        // The detector's verdicts stay legal: cleared resumes READY, or it fails from SUSPECT.
        NodeRecord cleared = f.copy().apply(new ClusterCommand.NodeSuspicionCleared("w1", 13, 14)).state().nodes().get("w1");
        assertEquals(WorkerState.READY, cleared.state());
        assertEquals(WorkerState.FAILED, f.copy().apply(fail("w1", 1_500)).state().nodes().get("w1").state());

        // A re-reported READY (the same assignment sent again) does not skip the suspicion either.
        Fixtures ready = Fixtures.ready().apply(suspect("w2", 100))
                .apply(new ClusterCommand.LoadCompleted("w2", 1, "c2", 101));
        assertEquals(WorkerState.SUSPECT, ready.state().nodes().get("w2").state());
        // A new assignment while SUSPECT: the node will resume JOINED, its partition UNLOADED.
        Fixtures reassigned = Fixtures.ready().apply(suspect("w2", 100))
                .apply(new ClusterCommand.PartitionsAssigned(2, Fixtures.twoStages("w1", "w2"), 101));
        NodeRecord w2 = reassigned.state().nodes().get("w2");
        assertEquals(WorkerState.SUSPECT, w2.state());
        assertEquals(WorkerState.JOINED, w2.health().resumeState());
        assertEquals(PartitionState.UNLOADED, w2.partition());
    }

    @Test
    void nodeFailedNeedsSuspicionFirstAndDegradesAServingSystem() {
        Fixtures ready = Fixtures.ready();
        refused(ready, fail("w1", 100)); // READY -> FAILED directly is not a transition
        Fixtures f = ready.apply(suspect("w1", 100)).apply(fail("w1", 1_500));
        NodeRecord n = f.state().nodes().get("w1");
        assertEquals(WorkerState.FAILED, n.state());
        assertEquals(1_500, n.health().failedAtMs());
        assertEquals(100, n.health().lastHeartbeatMs());
        assertTrue(n.health().failedByDetector());
        assertEquals(SystemState.DEGRADED, f.state().system());
        assertTrue(f.state().statusMessage().contains("w1"), f.state().statusMessage());
        // Reports from a node declared FAILED are refused until it is back.
        refused(f, new ClusterCommand.LoadCompleted("w1", 1, "c1", 1_600));
        // A node outside the pipeline fails without degrading anything.
        Fixtures bootstrapping = Fixtures.joined().apply(suspect("w2", 10)).apply(fail("w2", 20));
        assertEquals(SystemState.BOOTSTRAPPING, bootstrapping.state().system());
    }

    @Test
    void nodeRecoveredIsHonestAboutThePartition() {
        Fixtures failed = Fixtures.ready().apply(suspect("w1", 100)).apply(fail("w1", 1_500));
        refused(failed, new ClusterCommand.NodeRecovered("w2", false, 1_600, 1_600)); // w2 never failed

        // Restarted: the stage must be loaded again, the system stays DEGRADED until it is.
        Fixtures restarted = Fixtures.ready().apply(suspect("w1", 100)).apply(fail("w1", 1_500))
                .apply(new ClusterCommand.NodeRecovered("w1", false, 9_000, 9_010));
        NodeRecord n = restarted.state().nodes().get("w1");
        assertEquals(WorkerState.JOINED, n.state());
        assertEquals(PartitionState.UNLOADED, n.partition());
        assertEquals(0, n.layerStart(), "the layer range stays assigned");
        assertEquals(9_010, n.health().recoveredAtMs());
        assertEquals(1_500, n.health().failedAtMs());
        assertEquals(SystemState.DEGRADED, restarted.state().system());
        // The same-epoch assignment reloaded on it brings the system back.
        restarted.apply(new ClusterCommand.LoadProgressed("w1", 1, PartitionState.DOWNLOADING, 0.5, "f", 9_100))
                .apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", 9_200));
        assertEquals(SystemState.DEGRADED, restarted.state().system()); // its reloaded weights are not validated yet
        restarted.apply(Fixtures.validated(1, 9_300));
        assertEquals(SystemState.READY, restarted.state().system());

        // Only unreachable: it still holds its partition and the system is READY again at once.
        Fixtures resumed = Fixtures.ready().apply(suspect("w1", 100)).apply(fail("w1", 1_500))
                .apply(new ClusterCommand.NodeRecovered("w1", true, 3_000, 3_010));
        assertEquals(WorkerState.READY, resumed.state().nodes().get("w1").state());
        assertEquals(SystemState.READY, resumed.state().system());
        refused(resumed, new ClusterCommand.NodeRecovered("w1", true, 3_100, 3_100)); // not FAILED any more
    }

    @Test
    void aLoadFailureIsNotRecoveredByHeartbeats() {
        Fixtures f = Fixtures.assigned().apply(new ClusterCommand.LoadFailed("w1", 1, "CHECKSUM_MISMATCH", "bad", 6));
        refused(f, new ClusterCommand.NodeRecovered("w1", false, 7, 7));
        refused(f, suspect("w1", 8)); // FAILED (load) -> SUSPECT is not a transition
    }
}
