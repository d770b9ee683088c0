package io.butterfly.coordinator.raft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.EpochMonotonicTest;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.planning.StageAssignment;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
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

    /** A snapshot written before nodes reported a KV-cache budget installs with 0 (unknown) for each node. */
    @Test
    void aSnapshotWrittenBeforeBudgetsDecodesWithUnknownBudgets() throws Exception {
        ClusterState s = ClusterState.initial();
        s = ClusterReducer.apply(s, new ClusterCommand.Bootstrap("m", 1, 1), 1);
        s = ClusterReducer.apply(s, new ClusterCommand.NodeJoined(info("w1"), 2), 2);
        s = ClusterReducer.apply(s, new ClusterCommand.PartitionsAssigned(1,
                List.of(new StageAssignment("w1", 0, 2, true, true)), 3), 3);
        s = ClusterReducer.apply(s, new ClusterCommand.LoadCompleted("w1", 1, "c", 1L << 30, 4), 4);
        assertEquals(1L << 30, s.nodes().get("w1").kvCacheBudgetBytes());
        String body = new String(ClusterStateCodec.encode(s), StandardCharsets.UTF_8).split("\n", 2)[1];
        String old = body.replace(",\"kvCacheBudgetBytes\":" + (1L << 30), "");
        assertTrue(old.length() < body.length(), body);
        ClusterState decoded = ClusterStateCodec.decode(snapshot(old));
        assertEquals(0, decoded.nodes().get("w1").kvCacheBudgetBytes());
        assertEquals(s.nodes().get("w1").partition(), decoded.nodes().get("w1").partition());
    }

    /** A snapshot of {@code body} with its checksum header, as ClusterStateCodec writes one. */
    private static byte[] snapshot(String body) throws Exception {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        String header = "sha256:" + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)) + "\n";
        return (header + body).getBytes(StandardCharsets.UTF_8);
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
