package io.butterfly.coordinator.liveness;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.cluster.PartitionState;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
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
 */
public final class LivenessPolicy {

    private final DetectorSettings settings;

    public LivenessPolicy(DetectorSettings settings) {
        this.settings = settings;
    }

    public List<ClusterCommand> evaluate(ClusterState state, Function<String, NodeObservation> observe, long nowMs) {
        List<ClusterCommand> out = new ArrayList<>();
        for (NodeRecord n : state.nodes().values()) {
            String id = n.info().nodeId();
            NodeObservation o = observe.apply(id);
            ClusterCommand c = decide(state, n, o, nowMs);
            if (c != null) {
                out.add(c);
            }
            if (c instanceof ClusterCommand.NodeSuspected s) {
                // Suspicion and failure may be due in the same tick (e.g. after a stall of the monitor).
                ClusterCommand f = failure(id, o, nowMs, s.atMs());
                if (f != null) {
                    out.add(f);
                }
            }
        }
        return out;
    }

    private ClusterCommand decide(ClusterState state, NodeRecord n, NodeObservation o, long nowMs) {
        String id = n.info().nodeId();
        long last = Math.max(o.lastHeartbeatMs(), 0);
        switch (n.state()) {
            case JOINED, READY -> {
                if (!o.everHeard()) {
                    return null; // never heartbeated: nothing to judge yet
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
                return failure(id, o, nowMs, n.health().suspectedAtMs());
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
    private ClusterCommand failure(String id, NodeObservation o, long nowMs, long suspectedAtMs) {
        long last = Math.max(o.lastHeartbeatMs(), 0);
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
