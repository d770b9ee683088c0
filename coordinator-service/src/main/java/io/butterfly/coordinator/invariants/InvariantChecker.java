package io.butterfly.coordinator.invariants;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.liveness.NodeObservation;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Checks the invariants of docs/state-machines.md §3.3 against one snapshot (§7.4). It remembers only the highest
 * epoch seen, for monotonicity; everything else is a pure function of the inputs.
 */
public final class InvariantChecker {

    private long highestEpoch;

    public synchronized List<Violation> check(InvariantInputs in) {
        ClusterState s = in.state();
        List<Violation> out = new ArrayList<>();
        singleCoordinator(in.coordinators(), out);
        epochMonotonicity(s, out);
        if (active(s.system())) {
            quorum(s, out);
            alignment(s, out);
            assignment(s, out);
            if (in.observations() != null) {
                epochSkew(s, in, out);
                connectionLiveness(s, in, out);
            }
        }
        return out;
    }

    /** States in which a plan exists and the pipeline is expected to serve. */
    private static boolean active(SystemState system) {
        return system == SystemState.READY || system == SystemState.COMPUTING || system == SystemState.COMMITTING
                || system == SystemState.DEGRADED;
    }

    private static void singleCoordinator(List<CoordinatorClaim> claims, List<Violation> out) {
        Map<Long, List<String>> leadersByTerm = new TreeMap<>();
        for (CoordinatorClaim c : claims) {
            if (c.leader()) {
                leadersByTerm.computeIfAbsent(c.term(), t -> new ArrayList<>()).add(c.replicaId());
            }
        }
        leadersByTerm.forEach((term, leaders) -> {
            if (leaders.size() > 1) {
                out.add(new Violation(Invariant.SINGLE_COORDINATOR,
                        leaders.size() + " coordinators lead in term " + term + ": " + leaders));
            }
        });
    }

    private void epochMonotonicity(ClusterState s, List<Violation> out) {
        if (s.epoch() < highestEpoch) {
            out.add(new Violation(Invariant.EPOCH_MONOTONICITY,
                    "epoch went back from " + highestEpoch + " to " + s.epoch()));
        }
        highestEpoch = Math.max(highestEpoch, s.epoch());
    }

    private static void quorum(ClusterState s, List<Violation> out) {
        // Without stage replicas f = 0: every stage is needed, so the quorum is the whole pipeline.
        List<String> down = s.pipeline().stream()
                .filter(id -> !operational(s.nodes().get(id)))
                .toList();
        if (!down.isEmpty()) {
            out.add(new Violation(Invariant.QUORUM_OPERATIONAL, (s.pipeline().size() - down.size()) + " of "
                    + s.pipeline().size() + " pipeline stages operational; not operational: " + down));
        }
    }

    private static boolean operational(NodeRecord n) {
        return n != null && switch (n.state()) {
            case READY, COMPUTING, AGGREGATING, COMMITTING -> true;
            default -> false;
        };
    }

    /** docs/state-machines.md §3.1: in READY every pipeline worker is READY. (Other states' rows describe transient phases.) */
    private static void alignment(ClusterState s, List<Violation> out) {
        if (s.system() != SystemState.READY) {
            return;
        }
        Map<String, WorkerState> misaligned = new TreeMap<>();
        for (String id : s.pipeline()) {
            NodeRecord n = s.nodes().get(id);
            if (n != null && n.state() != WorkerState.READY) {
                misaligned.put(id, n.state());
            }
        }
        if (!misaligned.isEmpty()) {
            out.add(new Violation(Invariant.STATE_ALIGNMENT, "system is READY but workers are " + misaligned));
        }
    }

    /**
     * The plan's ranges, in stage order, cover [0, n) contiguously; embedding first, head last. Several pipelines
     * (docs/scale-out.md) follow one another in the plan, each from layer 0: a stage holding the embedding after one
     * holding the head begins the next.
     */
    private static void assignment(ClusterState s, List<Violation> out) {
        int expectedStart = 0;
        List<String> stages = s.pipeline();
        boolean afterHead = true;
        for (int i = 0; i < stages.size(); i++) {
            NodeRecord n = s.nodes().get(stages.get(i));
            if (n == null || n.layerStart() == null) {
                out.add(new Violation(Invariant.WORK_ASSIGNMENT_VALIDITY,
                        "stage " + i + " (" + stages.get(i) + ") has no layer range"));
                return;
            }
            if (afterHead && n.hasEmbedding()) {
                expectedStart = 0; // the first stage of the plan or of its next pipeline
            }
            if (n.layerStart() != expectedStart || n.layerEnd() <= n.layerStart()) {
                out.add(new Violation(Invariant.WORK_ASSIGNMENT_VALIDITY, "stage " + i + " (" + stages.get(i)
                        + ") holds [" + n.layerStart() + ", " + n.layerEnd() + ") where [" + expectedStart
                        + ", ...) was expected"));
                return;
            }
            boolean last = i == stages.size() - 1;
            if (n.hasEmbedding() != afterHead || (last && !n.hasHead())) {
                out.add(new Violation(Invariant.WORK_ASSIGNMENT_VALIDITY, "stage " + i + " (" + stages.get(i)
                        + ") embedding=" + n.hasEmbedding() + " head=" + n.hasHead()
                        + ": only the first stage embeds and only the last holds the head"));
                return;
            }
            afterHead = n.hasHead();
            expectedStart = n.layerEnd();
        }
    }

    private static void epochSkew(ClusterState s, InvariantInputs in, List<Violation> out) {
        TreeSet<Long> epochs = new TreeSet<>();
        epochs.add(s.epoch());
        for (String id : s.pipeline()) {
            long loaded = in.observations().apply(id).loadedEpoch();
            if (loaded > 0) {
                epochs.add(loaded);
            }
        }
        if (epochs.size() > 2) {
            out.add(new Violation(Invariant.EPOCH_SKEW, "pipeline nodes hold partitions of epochs " + epochs
                    + " while the cluster is at epoch " + s.epoch()));
        }
    }

    private static void connectionLiveness(ClusterState s, InvariantInputs in, List<Violation> out) {
        Map<String, Long> silent = new TreeMap<>();
        for (String id : s.pipeline()) {
            if (!operational(s.nodes().get(id))) {
                continue;
            }
            NodeObservation o = in.observations().apply(id);
            long silence = o.everHeard() ? in.nowMs() - o.lastHeartbeatMs() : Long.MAX_VALUE;
            if (silence > in.connectionTimeoutMs()) {
                silent.put(id, o.everHeard() ? silence : -1);
            }
        }
        if (!silent.isEmpty()) {
            out.add(new Violation(Invariant.CONNECTION_LIVENESS, "READY nodes without a heartbeat within "
                    + in.connectionTimeoutMs() + " ms (ms silent, -1 = never heard): "
                    + silent.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue())
                    .collect(Collectors.joining(", "))));
        }
    }
}
