package io.butterfly.coordinator.liveness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The monitor's rules, end to end with a real tracker, detector and reducer under a fake clock:
 * heartbeats are fed at chosen times and every verdict is applied like the monitor does.
 */
class LivenessPolicyTest {

    private final DetectorSettings settings = PhiAccrualDetectorTest.DEFAULTS;
    private final HeartbeatTracker tracker = new HeartbeatTracker(settings);
    private static final long UNHEARD_GRACE_MS = 10_000;
    private static final long LOADING_PAUSE_MS = 5_000;
    private final LivenessPolicy policy = new LivenessPolicy(settings, UNHEARD_GRACE_MS, LOADING_PAUSE_MS);
    private ClusterState state = readyCluster();
    private long index = state.lastAppliedIndex();
    private long now = 10_000;
    /** When the leader running the policy began watching: here, when the test starts. */
    private final long watchingSince = now;

    private static ClusterState readyCluster() {
        ClusterState s = ClusterState.initial();
        List<ClusterCommand> commands = List.of(
                new ClusterCommand.Bootstrap("tiny", 2, 1),
                new ClusterCommand.ModelResolved("tiny", "root", 2),
                new ClusterCommand.NodeJoined(info("w1"), 3),
                new ClusterCommand.NodeJoined(info("w2"), 4),
                new ClusterCommand.PartitionsAssigned(1, List.of(new StageAssignment("w1", 0, 2, true, false),
                        new StageAssignment("w2", 2, 4, false, true)), 5),
                new ClusterCommand.LoadCompleted("w1", 1, "c1", 6),
                new ClusterCommand.LoadCompleted("w2", 1, "c2", 7),
                new ClusterCommand.WeightsValidated(new WeightValidation(1, WeightValidation.Status.VALID, "root", "p",
                        List.of("w1", "w2"), List.of(), List.of(), 8), 8));
        long i = 0;
        for (ClusterCommand c : commands) {
            s = ClusterReducer.apply(s, c, ++i);
        }
        return s;
    }

    private static NodeInfo info(String id) {
        return new NodeInfo(id, "worker", "127.0.0.1", 9000, 8000, 4, 8L << 30, 10, "cpu");
    }

    /** Advances the fake clock in 25 ms monitor ticks; both nodes beat every 100 ms unless silenced. */
    private List<ClusterCommand> run(long millis, boolean w1Beats, boolean w2Beats, long loadedEpoch) {
        List<ClusterCommand> verdicts = new java.util.ArrayList<>();
        long end = now + millis;
        while (now < end) {
            now += 25;
            if (now % 100 == 0) {
                if (w1Beats) {
                    tracker.heartbeat("w1", now, loadedEpoch);
                }
                if (w2Beats) {
                    tracker.heartbeat("w2", now, 1);
                }
            }
            for (ClusterCommand c : policy.evaluate(state, id -> tracker.observe(id, now), now, watchingSince)) {
                state = ClusterReducer.apply(state, c, ++index);
                verdicts.add(c);
            }
        }
        return verdicts;
    }

    private void connectBoth() {
        tracker.streamOpened("w1", 1);
        tracker.streamOpened("w2", 2);
    }

    @Test
    void healthyNodesProduceNoVerdicts() {
        connectBoth();
        assertTrue(run(5_000, true, true, 1).isEmpty());
        assertEquals(SystemState.READY, state.system());
    }

    @Test
    void nodesNeverHeardFromAreNotJudgedWithinTheGrace() {
        assertTrue(run(UNHEARD_GRACE_MS - 100, false, false, 0).isEmpty());
    }

    @Test
    void anUnassignedNodeNeverHeardFromIsNotJudged() {
        // It heartbeats only once an assignment names this coordinator (the workers' default).
        state = ClusterReducer.apply(state, new ClusterCommand.NodeJoined(info("w3"), now), ++index);
        connectBoth();
        assertTrue(run(3 * UNHEARD_GRACE_MS, true, true, 1).isEmpty());
        assertEquals(WorkerState.JOINED, state.nodes().get("w3").state());
    }

    @Test
    void anAssignedNodeThisLeaderNeverHeardIsFailedAfterTheGrace() {
        // A leader elected after the node died (e.g. restarted, so it never heard it): phi has nothing to judge.
        tracker.streamOpened("w2", 2);
        List<ClusterCommand> verdicts = run(UNHEARD_GRACE_MS + 1_000, false, true, 1);

        assertEquals(2, verdicts.size(), verdicts.toString());
        ClusterCommand.NodeSuspected suspected = assertInstanceOf(ClusterCommand.NodeSuspected.class, verdicts.get(0));
        ClusterCommand.NodeFailed failed = assertInstanceOf(ClusterCommand.NodeFailed.class, verdicts.get(1));
        assertEquals("w1", suspected.nodeId());
        assertEquals("w1", failed.nodeId());
        assertEquals(watchingSince + UNHEARD_GRACE_MS, failed.atMs());
        assertEquals("no heartbeat reached this coordinator in the 10000 ms since it began watching", failed.cause());
        assertEquals(WorkerState.FAILED, state.nodes().get("w1").state());
        assertEquals(SystemState.DEGRADED, state.system());
    }

    @Test
    void aNodeSuspectedByTheFormerLeaderAndNeverHeardByThisOneIsFailedAfterTheGrace() {
        state = ClusterReducer.apply(state, new ClusterCommand.NodeSuspected("w1", 9_000, 5.0, "silence", now), ++index);
        tracker.streamOpened("w2", 2);
        List<ClusterCommand> verdicts = run(UNHEARD_GRACE_MS + 1_000, false, true, 1);

        ClusterCommand.NodeFailed failed = assertInstanceOf(ClusterCommand.NodeFailed.class, verdicts.get(0));
        assertEquals(1, verdicts.size(), verdicts.toString());
        assertEquals(now - 1_000, failed.atMs());
        assertEquals(WorkerState.FAILED, state.nodes().get("w1").state());
    }

    @Test
    void aNodeHeardOnceWithinTheGraceIsJudgedByPhiOnly() {
        connectBoth();
        List<ClusterCommand> verdicts = run(UNHEARD_GRACE_MS - 1_000, false, true, 1);
        tracker.heartbeat("w1", now, 1);
        verdicts.addAll(run(5 * UNHEARD_GRACE_MS, true, true, 1));
        assertTrue(verdicts.isEmpty(), verdicts.toString());
        assertEquals(WorkerState.READY, state.nodes().get("w1").state());
    }

    @Test
    void silenceSuspectsThenFailsAndDegradesTheSystem() {
        connectBoth();
        run(2_000, true, true, 1);
        long silentFrom = now;
        List<ClusterCommand> verdicts = run(3_000, false, true, 1);
        assertEquals(2, verdicts.size(), verdicts.toString());
        ClusterCommand.NodeSuspected suspected = assertInstanceOf(ClusterCommand.NodeSuspected.class, verdicts.get(0));
        ClusterCommand.NodeFailed failed = assertInstanceOf(ClusterCommand.NodeFailed.class, verdicts.get(1));
        assertEquals("w1", failed.nodeId());
        assertTrue(suspected.atMs() < failed.atMs());
        long detection = failed.atMs() - silentFrom;
        assertTrue(detection > 1_150 && detection < 1_600, "FAILED after " + detection + " ms of silence");
        assertEquals(WorkerState.FAILED, state.nodes().get("w1").state());
        assertEquals(failed.atMs(), state.nodes().get("w1").health().failedAtMs());
        assertEquals(silentFrom, state.nodes().get("w1").health().lastHeartbeatMs());
        assertEquals(SystemState.DEGRADED, state.system());
    }

    @Test
    void oneSecondPauseIsNeverAFailure() {
        connectBoth();
        run(2_000, true, true, 1);
        List<ClusterCommand> verdicts = run(1_100, false, true, 1); // paused: the stream stays open
        verdicts.addAll(run(1_000, true, true, 1));
        assertTrue(verdicts.stream().noneMatch(c -> c instanceof ClusterCommand.NodeFailed), verdicts.toString());
        assertEquals(WorkerState.READY, state.nodes().get("w1").state());
        assertEquals(SystemState.READY, state.system());
    }

    @Test
    void closedStreamFailsWithinTheGraceUnlessTheNodeReconnects() {
        connectBoth();
        run(1_000, true, true, 1);
        tracker.streamClosed("w1", 1, now);
        long closedAt = now;
        List<ClusterCommand> verdicts = run(500, false, true, 1);
        assertInstanceOf(ClusterCommand.NodeSuspected.class, verdicts.get(0));
        ClusterCommand.NodeFailed failed = assertInstanceOf(ClusterCommand.NodeFailed.class, verdicts.get(1));
        long detection = failed.atMs() - closedAt;
        assertTrue(detection >= settings.reconnectGraceMs() && detection <= settings.reconnectGraceMs() + 25,
                "FAILED " + detection + " ms after the stream closed");
    }

    @Test
    void aReconnectWithinTheGraceClearsTheSuspicion() {
        connectBoth();
        run(1_000, true, true, 1);
        tracker.streamClosed("w1", 1, now);
        List<ClusterCommand> verdicts = run(100, false, true, 1);
        assertEquals(List.of(ClusterCommand.NodeSuspected.class), verdicts.stream().map(Object::getClass).toList());
        tracker.streamOpened("w1", 3);
        verdicts = run(200, true, true, 1);
        assertInstanceOf(ClusterCommand.NodeSuspicionCleared.class, verdicts.get(0));
        assertEquals(WorkerState.READY, state.nodes().get("w1").state());
    }

    @Test
    void aRestartedNodeComesBackWithoutItsPartition() {
        connectBoth();
        run(1_000, true, true, 1);
        tracker.streamClosed("w1", 1, now);
        run(1_000, false, true, 1);
        assertEquals(WorkerState.FAILED, state.nodes().get("w1").state());
        tracker.streamOpened("w1", 4); // the new process holds nothing yet: loaded epoch 0
        List<ClusterCommand> verdicts = run(300, true, true, 0);
        ClusterCommand.NodeRecovered back = assertInstanceOf(ClusterCommand.NodeRecovered.class, verdicts.get(0));
        assertFalse(back.partitionIntact());
        assertEquals(WorkerState.JOINED, state.nodes().get("w1").state());
        assertEquals(SystemState.DEGRADED, state.system());
    }

    @Test
    void aNodeThatWasOnlyUnreachableComesBackWithItsPartition() {
        connectBoth();
        run(1_000, true, true, 1);
        run(3_000, false, true, 1); // a long stall with the stream open: phi fails it
        assertEquals(WorkerState.FAILED, state.nodes().get("w1").state());
        List<ClusterCommand> verdicts = run(300, true, true, 1);
        ClusterCommand.NodeRecovered back = assertInstanceOf(ClusterCommand.NodeRecovered.class, verdicts.get(0));
        assertTrue(back.partitionIntact());
        assertEquals(WorkerState.READY, state.nodes().get("w1").state());
        assertEquals(SystemState.READY, state.system());
    }

    @Test
    void aLoadingNodeIsJudgedBySilenceOnlyAfterTheLoadingPause() {
        connectBoth();
        run(1_000, true, true, 1);
        startLoading("w1");
        long silentFrom = now;
        List<ClusterCommand> verdicts = run(LOADING_PAUSE_MS - 100, false, true, 1); // busy loading: silent
        assertTrue(verdicts.isEmpty(), "a loader silent for 4.9 s: " + verdicts);
        verdicts = run(1_000, false, true, 1);
        ClusterCommand.NodeFailed failed = assertInstanceOf(ClusterCommand.NodeFailed.class, verdicts.get(verdicts.size() - 1));
        assertEquals(silentFrom + LOADING_PAUSE_MS, failed.atMs(), "judged by phi (long past its threshold) from then on");
    }

    @Test
    void aLoadingNodeHeardAgainAfterALongPauseStaysUnsuspected() {
        connectBoth();
        run(1_000, true, true, 1);
        startLoading("w1");
        List<ClusterCommand> verdicts = run(3_000, false, true, 1);
        verdicts.addAll(run(1_000, true, true, 1));
        assertTrue(verdicts.isEmpty(), verdicts.toString());
        assertEquals(WorkerState.JOINED, state.nodes().get("w1").state());
    }

    @Test
    void aLoadingNodeWhoseStreamClosesIsFailedAsFastAsAnyOther() {
        connectBoth();
        run(1_000, true, true, 1);
        startLoading("w1");
        tracker.streamClosed("w1", 1, now);
        long closedAt = now;
        List<ClusterCommand> verdicts = run(500, false, true, 1);
        ClusterCommand.NodeFailed failed = assertInstanceOf(ClusterCommand.NodeFailed.class, verdicts.get(1));
        assertTrue(failed.atMs() - closedAt <= settings.reconnectGraceMs() + 25, failed.toString());
    }

    /** A new plan moves w1 onto other layers: it is downloading them. */
    private void startLoading(String id) {
        state = ClusterReducer.apply(state, new ClusterCommand.PartitionsAssigned(2, List.of(
                new StageAssignment("w2", 0, 1, true, false), new StageAssignment(id, 1, 4, false, true)), now), ++index);
        state = ClusterReducer.apply(state, new ClusterCommand.LoadProgressed(id, 2,
                io.butterfly.coordinator.statemachine.PartitionState.DOWNLOADING, 0.2, "layer-1", now), ++index);
        assertEquals(io.butterfly.coordinator.statemachine.PartitionState.DOWNLOADING, state.nodes().get(id).partition());
    }
}
