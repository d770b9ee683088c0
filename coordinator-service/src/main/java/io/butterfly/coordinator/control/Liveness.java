package io.butterfly.coordinator.control;

import io.butterfly.coordinator.liveness.DetectorSettings;
import io.butterfly.coordinator.liveness.HeartbeatTracker;
import io.butterfly.coordinator.liveness.NodeObservation;
import java.time.Clock;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Heartbeats and heartbeat streams per node, fed to a phi-accrual detector. Liveness is observed
 * here; verdicts (SUSPECT, FAILED, back) are decided by {@link LivenessMonitor} and go through the
 * control log.
 */
public class Liveness {

    private final HeartbeatTracker tracker;
    private final Clock clock;
    private final AtomicLong streamIds = new AtomicLong();

    public Liveness(DetectorSettings settings, Clock clock) {
        this.tracker = new HeartbeatTracker(settings);
        this.clock = clock;
    }

    /** A heartbeat from {@code nodeId}; {@code loadedEpoch} is the epoch of the partition it holds READY. */
    public void heartbeat(String nodeId, long loadedEpoch) {
        tracker.heartbeat(nodeId, clock.millis(), loadedEpoch);
    }

    /** Registers a new heartbeat stream and returns its id (for {@link #streamClosed}). */
    public long streamOpened(String nodeId) {
        long id = streamIds.incrementAndGet();
        tracker.streamOpened(nodeId, id);
        return id;
    }

    public void streamClosed(String nodeId, long streamId) {
        tracker.streamClosed(nodeId, streamId, clock.millis());
    }

    public NodeObservation observe(String nodeId) {
        return tracker.observe(nodeId, clock.millis());
    }

    public NodeObservation observe(String nodeId, long nowMs) {
        return tracker.observe(nodeId, nowMs);
    }

    public Instant lastHeartbeat(String nodeId) {
        long at = tracker.observe(nodeId, clock.millis()).lastHeartbeatMs();
        return at < 0 ? null : Instant.ofEpochMilli(at);
    }

    public DetectorSettings settings() {
        return tracker.settings();
    }
}
