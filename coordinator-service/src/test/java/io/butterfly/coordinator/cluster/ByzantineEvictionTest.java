package io.butterfly.coordinator.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.util.List;
import org.junit.jupiter.api.Test;

/** An audit's verdict (NodeByzantine): the node is FAILED for good, and its stage is planned away like a lost one. */
class ByzantineEvictionTest {

    private static final String CAUSE = "step 12 of task t1, layers [0, 2): output 00000000000000aa, auditor w3 and "
            + "referee w4 computed 00000000000000bb";

    @Test
    void aServingStageCaughtComputingWrongIsFailedAndPlannedAway() {
        Fixtures f = Fixtures.ready().apply(new ClusterCommand.NodeByzantine("w1", CAUSE, 500));
        NodeRecord n = f.state().nodes().get("w1");
        assertEquals(WorkerState.FAILED, n.state());
        assertTrue(n.health().byzantine());
        assertEquals("Byzantine: " + CAUSE, n.health().cause());
        assertEquals(500, n.health().failedAtMs());
        assertFalse(n.health().failedByDetector(), "the detector did not fail it and its heartbeats cannot lift it");
        assertTrue(n.lost());
        assertEquals(List.of("w1"), f.state().lostStages(), "the leader plans it away as it would a crashed node's");
        assertEquals(SystemState.DEGRADED, f.state().system());
        assertTrue(f.state().recovery().ongoing());
        assertEquals(List.of("w1"), f.state().recovery().lostNodes());
        assertFalse(f.state().spares().contains("w1"), "a Byzantine node never takes a stage again");
    }

    @Test
    void anySuspectedOrJoinedNodeCanBeEvictedButNotTwice() {
        Fixtures suspected = Fixtures.ready()
                .apply(new ClusterCommand.NodeSuspected("w2", 90, 4.2, "no heartbeat for 500 ms", 100))
                .apply(new ClusterCommand.NodeByzantine("w2", CAUSE, 200));
        assertEquals(WorkerState.FAILED, suspected.state().nodes().get("w2").state());
        assertTrue(suspected.state().nodes().get("w2").health().byzantine());

        Fixtures joined = Fixtures.joined().apply(new ClusterCommand.NodeByzantine("w1", CAUSE, 50));
        assertEquals(WorkerState.FAILED, joined.state().nodes().get("w1").state());
        assertEquals(SystemState.BOOTSTRAPPING, joined.state().system(), "nothing served, nothing to recover");

        ClusterState before = suspected.state();
        assertThrows(IllegalTransitionException.class, () -> ClusterReducer.apply(before,
                new ClusterCommand.NodeByzantine("w2", CAUSE, 300), suspected.nextIndex()));
        assertThrows(IllegalTransitionException.class, () -> ClusterReducer.apply(before,
                new ClusterCommand.NodeByzantine("nobody", CAUSE, 300), suspected.nextIndex()));
    }

    @Test
    void theDetectorDoesNotBringAByzantineNodeBack() {
        Fixtures f = Fixtures.ready().apply(new ClusterCommand.NodeByzantine("w1", CAUSE, 500));
        // NodeRecovered is only for nodes the detector failed: refused, the node stays FAILED and lost.
        ClusterState before = f.state();
        assertThrows(IllegalTransitionException.class, () -> ClusterReducer.apply(before,
                new ClusterCommand.NodeRecovered("w1", true, 600, 600), f.nextIndex()));
        // Nor does a load report of its epoch (sent again, or late) make it READY.
        assertThrows(IllegalTransitionException.class, () -> ClusterReducer.apply(before,
                new ClusterCommand.LoadCompleted("w1", 1, "c1", 600), f.nextIndex()));
        assertEquals(WorkerState.FAILED, before.nodes().get("w1").state());
    }
}
