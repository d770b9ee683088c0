package io.butterfly.coordinator.invariants;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.liveness.NodeObservation;
import io.butterfly.coordinator.planning.StageAssignment;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Each invariant of docs/state-machines.md §3.3 holds on a healthy cluster and is reported when broken. */
class InvariantCheckerTest {

    private static final long NOW = 100_000;
    private static final List<CoordinatorClaim> ONE_LEADER = List.of(new CoordinatorClaim("c0", true, 3));

    private long index;

    private ClusterState apply(ClusterState s, ClusterCommand... commands) {
        for (ClusterCommand c : commands) {
            s = ClusterReducer.apply(s, c, ++index);
        }
        return s;
    }

    private static NodeInfo info(String id) {
        return new NodeInfo(id, "worker", "127.0.0.1", 9000, 8000, 2, 8L << 30, 10, "cpu");
    }

    private ClusterState ready(List<StageAssignment> stages) {
        ClusterState s = apply(ClusterState.initial(), new ClusterCommand.Bootstrap("m", 2, 1),
                new ClusterCommand.ModelResolved("m", "root", 2),
                new ClusterCommand.NodeJoined(info("w1"), 3), new ClusterCommand.NodeJoined(info("w2"), 4),
                new ClusterCommand.PartitionsAssigned(1, stages, 5));
        for (StageAssignment a : stages) {
            s = apply(s, new ClusterCommand.LoadCompleted(a.nodeId(), 1, "c-" + a.nodeId(), 6));
        }
        return apply(s, valid(1));
    }

    /** The cross-validation that lets the cluster become READY. */
    private static ClusterCommand.WeightsValidated valid(long epoch) {
        return new ClusterCommand.WeightsValidated(new WeightValidation(epoch, WeightValidation.Status.VALID, "root",
                "partition-root", List.of("w1", "w2"), List.of(), List.of(), 7), 7);
    }

    private static List<StageAssignment> twoStages() {
        return List.of(new StageAssignment("w1", 0, 2, true, false), new StageAssignment("w2", 2, 4, false, true));
    }

    private static Function<String, NodeObservation> heardAt(long ms, long loadedEpoch) {
        return id -> new NodeObservation(0.1, ms, true, -1, loadedEpoch);
    }

    private static List<Invariant> broken(List<Violation> vs) {
        return vs.stream().map(Violation::invariant).toList();
    }

    @Test
    void aHealthyReadyClusterViolatesNothing() {
        List<Violation> vs = new InvariantChecker().check(
                new InvariantInputs(ready(twoStages()), ONE_LEADER, heardAt(NOW - 50, 1), NOW, 2000));
        assertThat(vs).isEmpty();
    }

    @Test
    void twoLeadersInOneTermBreakSingleCoordinatorButLeadersOfDifferentTermsDoNot() {
        ClusterState s = ready(twoStages());
        List<CoordinatorClaim> split = List.of(new CoordinatorClaim("c0", true, 4), new CoordinatorClaim("c1", true, 4),
                new CoordinatorClaim("c2", false, 4));
        assertThat(broken(new InvariantChecker().check(new InvariantInputs(s, split, null, NOW, 2000))))
                .containsExactly(Invariant.SINGLE_COORDINATOR);
        // An old leader that has not yet heard of the new term is not two leaders in one term.
        List<CoordinatorClaim> stale = List.of(new CoordinatorClaim("c0", true, 4), new CoordinatorClaim("c1", true, 5));
        assertThat(new InvariantChecker().check(new InvariantInputs(s, stale, null, NOW, 2000))).isEmpty();
    }

    @Test
    void aFailedStageBreaksQuorumAndTheEpochNeverGoesBack() {
        ClusterState ready = ready(twoStages());
        ClusterState failed = apply(ready, new ClusterCommand.NodeSuspected("w2", NOW - 3000, 5, "silent", NOW - 500),
                new ClusterCommand.NodeFailed("w2", NOW - 3000, 12, "killed", NOW));
        InvariantChecker checker = new InvariantChecker();
        List<Violation> vs = checker.check(new InvariantInputs(failed, ONE_LEADER, null, NOW, 2000));
        assertThat(broken(vs)).containsExactly(Invariant.QUORUM_OPERATIONAL);
        assertThat(vs.get(0).message()).contains("1 of 2", "w2");

        ClusterState older = new ClusterState(ready.system(), ready.epoch() - 1, ready.modelId(), ready.merkleRoot(),
                ready.expectedWorkers(), ready.statusMessage(), ready.nodes(), ready.pipeline(), ready.tasks(),
                ready.lastAppliedIndex(), ready.checks(), ready.checkpoints(), ready.config(), ready.plans(),
                ready.recovery(), ready.draining(), ready.jobs(), ready.jobWork());
        assertThat(broken(checker.check(new InvariantInputs(older, ONE_LEADER, null, NOW, 2000))))
                .contains(Invariant.EPOCH_MONOTONICITY);
    }

    @Test
    void aSuspectWorkerWhileTheSystemIsReadyIsMisaligned() {
        ClusterState s = apply(ready(twoStages()),
                new ClusterCommand.NodeSuspected("w1", NOW - 600, 5, "silent", NOW));
        List<Violation> vs = new InvariantChecker().check(new InvariantInputs(s, ONE_LEADER, null, NOW, 2000));
        assertThat(broken(vs)).contains(Invariant.STATE_ALIGNMENT);
        assertThat(vs).filteredOn(v -> v.invariant() == Invariant.STATE_ALIGNMENT)
                .singleElement().satisfies(v -> assertThat(v.message()).contains("w1=SUSPECT"));
    }

    @Test
    void rangesWithAGapOrAMisplacedHeadAreNotAValidPartition() {
        ClusterState s = ready(twoStages());
        ClusterState gap = withNode(s, "w2", 3, 4, false, true);
        assertThat(new InvariantChecker().check(new InvariantInputs(gap, ONE_LEADER, null, NOW, 2000)))
                .extracting(Violation::invariant, Violation::message)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(Invariant.WORK_ASSIGNMENT_VALIDITY,
                        "stage 1 (w2) holds [3, 4) where [2, ...) was expected"));
        ClusterState headFirst = withNode(s, "w1", 0, 2, true, true);
        assertThat(broken(new InvariantChecker().check(new InvariantInputs(headFirst, ONE_LEADER, null, NOW, 2000))))
                .containsExactly(Invariant.WORK_ASSIGNMENT_VALIDITY);
    }

    @Test
    void silentReadyNodesAndThreeEpochsAreSeenOnlyWhereHeartbeatsArrive() {
        ClusterState s = ready(twoStages());
        Function<String, NodeObservation> w2Silent = id -> id.equals("w2")
                ? new NodeObservation(3, NOW - 5000, true, -1, 1) : new NodeObservation(0.1, NOW - 20, true, -1, 1);
        List<Violation> vs = new InvariantChecker().check(new InvariantInputs(s, ONE_LEADER, w2Silent, NOW, 2000));
        assertThat(broken(vs)).containsExactly(Invariant.CONNECTION_LIVENESS);
        assertThat(vs.get(0).message()).contains("w2=5000");
        // A follower does not receive heartbeats: it cannot judge liveness and does not pretend to.
        assertThat(new InvariantChecker().check(new InvariantInputs(s, ONE_LEADER, null, NOW, 2000))).isEmpty();

        ClusterState epoch3 = apply(s, new ClusterCommand.PartitionsAssigned(3, twoStages(), 7));
        Map<String, Long> loaded = Map.of("w1", 1L, "w2", 2L);
        Function<String, NodeObservation> skewed = id -> new NodeObservation(0.1, NOW - 20, true, -1, loaded.get(id));
        assertThat(broken(new InvariantChecker().check(new InvariantInputs(epoch3, ONE_LEADER, skewed, NOW, 2000))))
                .contains(Invariant.EPOCH_SKEW);
    }

    private static ClusterState withNode(ClusterState s, String id, int start, int end, boolean emb, boolean head) {
        var n = s.nodes().get(id);
        var changed = new io.butterfly.coordinator.cluster.NodeRecord(n.info(), n.state(), start, end, emb, head,
                n.partition(), n.loadProgress(), n.currentFile(), n.partitionChecksum(), n.failureCode(),
                n.failureMessage(), n.updatedAtMs(), n.health(), n.kvCacheBudgetBytes());
        var nodes = new java.util.LinkedHashMap<>(s.nodes());
        nodes.put(id, changed);
        return new ClusterState(s.system(), s.epoch(), s.modelId(), s.merkleRoot(), s.expectedWorkers(),
                s.statusMessage(), nodes, s.pipeline(), s.tasks(), s.lastAppliedIndex(), s.checks(), s.checkpoints(), s.config(),
                s.plans(), s.recovery(), s.draining(), s.jobs(), s.jobWork());
    }
}
