package io.butterfly.coordinator.liveness;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.statemachine.PartitionState;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Function;

/**
 * Turns observations into verdicts: which nodes to suspect, clear, fail or take back, as commands for
 * the control log. Pure (no clock, no I/O), so the rules are unit-tested directly.
 *
 * <p>Two kinds of evidence are combined. Silence is judged by phi: JOINED/READY become SUSPECT at the
 * suspicion threshold and SUSPECT becomes FAILED at the failure threshold. A closed heartbeat stream
 * is stronger evidence (the kernel closes a dead process's socket at once, while a paused or slow
 * process keeps it open): the node is suspected immediately and FAILED if it does not reconnect within
 * the grace period. Phi alone cannot both tolerate a one-second pause and detect a crash in under a
 * second, since both look like the same silence until the pause ends.
 *
 * <p>A third: a node holding an assignment heartbeats every coordinator replica the assignment names, so a
 * leader that has never heard it {@code unheardGraceMs} after it began watching (it was elected, say, after
 * a restart, and the node died meanwhile) suspects it and declares it FAILED at once. Phi cannot judge a node
 * it never heard, and without this rule such a node stayed READY (or SUSPECT) for ever.
 *
 * <p>A node loading its partition (downloading, verifying, loading, warming up) is judged by phi only once it has
 * been silent for {@code loadingPauseMs}: a load keeps its process at its busiest (hashing, the engine's threads,
 * the garbage collector), and a verdict on a slow loader re-plans its stage onto another worker, which then loads in
 * turn. Its stream closing still counts at once.
 */
public final class LivenessPolicy {

    private static final Set<PartitionState> LOADING = EnumSet.of(PartitionState.DOWNLOADING,
            PartitionState.VALIDATING, PartitionState.LOADED, PartitionState.WARMING);

    private final DetectorSettings settings;
    private final long unheardGraceMs;
    private final long loadingPauseMs;

    public LivenessPolicy(DetectorSettings settings, long unheardGraceMs, long loadingPauseMs) {
        if (unheardGraceMs <= 0) {
            throw new IllegalArgumentException("unheardGraceMs must be > 0, was " + unheardGraceMs);
        }
        if (loadingPauseMs < 0) {
            throw new IllegalArgumentException("loadingPauseMs must be >= 0, was " + loadingPauseMs);
        }
        this.settings = settings;
        this.unheardGraceMs = unheardGraceMs;
        this.loadingPauseMs = loadingPauseMs;
    }

    /**
     * The verdicts due at {@code nowMs}, for a leader that has watched (evaluated, with its heartbeat streams
     * open to the nodes) since {@code watchingSinceMs}.
     */
    public List<ClusterCommand> evaluate(ClusterState state, Function<String, NodeObservation> observe, long nowMs,
                                         long watchingSinceMs) {
        List<ClusterCommand> out = new ArrayList<>();
        for (NodeRecord n : state.nodes().values()) {
            String id = n.info().nodeId();
            NodeObservation o = observe.apply(id);
            String unheard = unheard(n, o, nowMs, watchingSinceMs);
            NodeObservation judged = silenceTolerated(n, o, nowMs) ? o.withPhi(0.0) : o;
            ClusterCommand c = decide(state, n, judged, nowMs, unheard);
            if (c != null) {
                out.add(c);
            }
            if (c instanceof ClusterCommand.NodeSuspected s) {
                // Suspicion and failure may be due in the same tick (e.g. after a stall of the monitor).
                ClusterCommand f = failure(id, judged, nowMs, unheard);
                if (f != null) {
                    out.add(f);
                }
            }
        }
        return out;
    }

    /** Whether the node's silence is not (yet) evidence: it is loading its partition and was heard recently enough. */
    private boolean silenceTolerated(NodeRecord n, NodeObservation o, long nowMs) {
        return LOADING.contains(n.partition()) && o.everHeard() && nowMs - o.lastHeartbeatMs() < loadingPauseMs;
    }

    /**
     * Why a node with an assignment counts as silent though this leader never heard it, or null: the grace runs
     * from when the leader began watching or the node last changed (was assigned, suspected), the later.
     */
    private String unheard(NodeRecord n, NodeObservation o, long nowMs, long watchingSinceMs) {
        if (o.everHeard() || n.layerStart() == null) {
            return null; // heard (phi judges it), or not assigned: it may heartbeat only once assigned
        }
        long since = Math.max(watchingSinceMs, n.updatedAtMs());
        return nowMs - since >= unheardGraceMs
                ? "no heartbeat reached this coordinator in the " + (nowMs - since) + " ms since it began watching"
                : null;
    }

    private ClusterCommand decide(ClusterState state, NodeRecord n, NodeObservation o, long nowMs, String unheard) {
        String id = n.info().nodeId();
        long last = Math.max(o.lastHeartbeatMs(), 0);
        switch (n.state()) {
            case JOINED, READY -> {
                if (!o.everHeard()) {
                    // never heartbeated to this leader: judged only once its grace is over
                    return unheard == null ? null : new ClusterCommand.NodeSuspected(id, last, o.phi(), unheard, nowMs);
                }
                if (!o.connected()) {
                    return new ClusterCommand.NodeSuspected(id, last, o.phi(), "heartbeat stream closed", nowMs);
                }
                if (o.phi() >= settings.suspicionThreshold()) {
                    return new ClusterCommand.NodeSuspected(id, last, o.phi(), silence(o, nowMs), nowMs);
                }
                return null;
            }
            case SUSPECT -> {
                if (o.connected() && o.lastHeartbeatMs() > n.health().suspectedAtMs()
                        && o.phi() < settings.suspicionThreshold()) {
                    return new ClusterCommand.NodeSuspicionCleared(id, last, nowMs);
                }
                return failure(id, o, nowMs, unheard);
            }
            case FAILED -> {
                if (n.health().failedByDetector() && o.connected() && o.lastHeartbeatMs() > n.health().failedAtMs()
                        && o.phi() < settings.suspicionThreshold()) {
                    boolean intact = o.loadedEpoch() == state.epoch() && n.partition() == PartitionState.READY;
                    return new ClusterCommand.NodeRecovered(id, intact, last, nowMs);
                }
                return null;
            }
            default -> {
                return null;
            }
        }
    }

    /** The failure verdict for a suspected node, or null if it is not (yet) due. */
    private ClusterCommand failure(String id, NodeObservation o, long nowMs, String unheard) {
        long last = Math.max(o.lastHeartbeatMs(), 0);
        if (unheard != null) {
            return new ClusterCommand.NodeFailed(id, last, o.phi(), unheard, nowMs);
        }
        if (!o.connected() && o.disconnectedAtMs() >= 0
                && nowMs - o.disconnectedAtMs() >= settings.reconnectGraceMs()) {
            return new ClusterCommand.NodeFailed(id, last, o.phi(), "heartbeat stream closed and not re-established within "
                    + settings.reconnectGraceMs() + " ms", nowMs);
        }
        if (o.phi() >= settings.failureThreshold()) {
            return new ClusterCommand.NodeFailed(id, last, o.phi(), silence(o, nowMs), nowMs);
        }
        return null;
    }

    private static String silence(NodeObservation o, long nowMs) {
        return String.format(Locale.ROOT, "no heartbeat for %d ms (phi %.2f)", nowMs - o.lastHeartbeatMs(), o.phi());
    }
}
