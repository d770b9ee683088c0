package io.butterfly.coordinator.raft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.EpochMonotonicTest;
import io.butterfly.coordinator.cluster.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.planning.StageAssignment;
import java.io.IOException;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Snapshots round-trip the cluster state exactly (map order and special doubles included) and detect damage. */
class ClusterStateCodecTest {

    @Test
    void randomStatesRoundTripExactly() throws IOException {
        int checked = 0;
        for (long seed = 1; seed <= 5; seed++) {
            Random rnd = new Random(seed);
            ClusterState state = ClusterState.initial();
            long index = 0;
            for (int i = 0; i < 600; i++) {
                try {
                    state = ClusterReducer.apply(state, EpochMonotonicTest.randomCommand(rnd, state, i), index + 1);
                    index++;
                } catch (IllegalTransitionException e) {
                    // refused: state unchanged
                }
                if (i % 25 == 0) {
                    assertRoundTrips(state);
                    checked++;
                }
            }
            assertTrue(state.lastAppliedIndex() > 20, "the random walk must really move");
        }
        assertTrue(checked > 100);
    }

    @Test
    void nonFiniteDetectorValuesRoundTrip() throws IOException {
        ClusterState s = ClusterState.initial();
        s = ClusterReducer.apply(s, new ClusterCommand.Bootstrap("m", 2, 1), 1);
        s = ClusterReducer.apply(s, new ClusterCommand.NodeJoined(info("w1"), 2), 2);
        s = ClusterReducer.apply(s, new ClusterCommand.NodeJoined(info("w2"), 3), 3);
        s = ClusterReducer.apply(s, new ClusterCommand.PartitionsAssigned(1,
                List.of(new StageAssignment("w2", 0, 1, true, false), new StageAssignment("w1", 1, 2, false, true)), 4), 4);
        s = ClusterReducer.apply(s, new ClusterCommand.NodeSuspected("w1", 3, Double.POSITIVE_INFINITY, "silent", 5), 7);
        s = ClusterReducer.apply(s, new ClusterCommand.NodeSuspected("w2", 3, Double.NaN, null, 6), 9);
        assertRoundTrips(s);
    }

    @Test
    void aDamagedSnapshotIsRefused() {
        byte[] bytes = ClusterStateCodec.encode(ClusterState.initial());
        bytes[bytes.length - 3] ^= 1;
        IOException e = assertThrows(IOException.class, () -> ClusterStateCodec.decode(bytes));
        assertTrue(e.getMessage().contains("checksum mismatch"), e.getMessage());
        assertThrows(IOException.class, () -> ClusterStateCodec.decode("{}".getBytes()));
    }

    private static void assertRoundTrips(ClusterState state) throws IOException {
        byte[] encoded = ClusterStateCodec.encode(state);
        ClusterState decoded = ClusterStateCodec.decode(encoded);
        assertEquals(state, decoded);
        // Same bytes again: same map order and the same doubles, not merely equal content.
        assertArrayEquals(encoded, ClusterStateCodec.encode(decoded));
        assertEquals(List.copyOf(state.nodes().keySet()), List.copyOf(decoded.nodes().keySet()));
        assertEquals(List.copyOf(state.tasks().keySet()), List.copyOf(decoded.tasks().keySet()));
    }

    private static NodeInfo info(String id) {
        return new NodeInfo(id, "worker", "127.0.0.1", 1, 2, 2, 1L << 30, 1.5, "cpu");
    }
}
