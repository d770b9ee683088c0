package io.butterfly.coordinator.liveness;

import java.util.HashMap;
import java.util.Map;

/**
 * Per-node heartbeat bookkeeping: one {@link PhiAccrualDetector} each, plus the state of the node's
 * heartbeat stream. Observations only: decisions are made from them by {@link LivenessPolicy} and
 * go through the control log. Times are supplied by the caller.
 */
public final class HeartbeatTracker {

    private final DetectorSettings settings;
    private final Map<String, Entry> nodes = new HashMap<>();

    public HeartbeatTracker(DetectorSettings settings) {
        this.settings = settings;
    }

    public DetectorSettings settings() {
        return settings;
    }

    public synchronized void heartbeat(String nodeId, long nowMs, long loadedEpoch) {
        Entry e = entry(nodeId);
        e.detector.heartbeat(nowMs);
        e.loadedEpoch = loadedEpoch;
    }

    /** A heartbeat stream from the node opened; {@code streamId} identifies it among the node's streams. */
    public synchronized void streamOpened(String nodeId, long streamId) {
        Entry e = entry(nodeId);
        e.openStream = streamId;
        e.disconnectedAtMs = -1;
    }

    /** A stream closed; only the node's latest stream counts (an older one may close after a reconnect). */
    public synchronized void streamClosed(String nodeId, long streamId, long nowMs) {
        Entry e = nodes.get(nodeId);
        if (e != null && e.openStream == streamId) {
            e.openStream = -1;
            e.disconnectedAtMs = nowMs;
        }
    }

    public synchronized NodeObservation observe(String nodeId, long nowMs) {
        Entry e = nodes.get(nodeId);
        if (e == null) {
            return NodeObservation.UNKNOWN;
        }
        return new NodeObservation(e.detector.phi(nowMs), e.detector.lastHeartbeatMs(), e.openStream >= 0,
                e.disconnectedAtMs, e.loadedEpoch);
    }

    private Entry entry(String nodeId) {
        return nodes.computeIfAbsent(nodeId, id -> new Entry(new PhiAccrualDetector(settings)));
    }

    private static final class Entry {
        final PhiAccrualDetector detector;
        long openStream = -1;
        long disconnectedAtMs = -1;
        long loadedEpoch;

        Entry(PhiAccrualDetector detector) {
            this.detector = detector;
        }
    }
}
