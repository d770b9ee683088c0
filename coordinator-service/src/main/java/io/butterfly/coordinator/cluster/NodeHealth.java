package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.WorkerState;

/**
 * What the failure detector decided about a node, as committed to the log. Times are Unix epoch
 * milliseconds taken from the commands (0 = never), so a benchmark can compute detection time as
 * {@code failedAtMs} minus the moment it killed the node.
 *
 * @param resumeState     the state a SUSPECT node returns to when its heartbeats come back
 * @param lastHeartbeatMs last heartbeat seen when the node was suspected, failed or recovered
 * @param suspectedAtMs   when the node was last marked SUSPECT
 * @param failedAtMs      when the node was last marked FAILED by the detector (load failures do not set it)
 * @param recoveredAtMs   when the node last came back after FAILED
 * @param phi             phi at the last suspicion or failure
 * @param cause           why the node was last suspected or failed
 * @param byzantine       an audit found it computing wrong (docs/verified-execution.md#audits): FAILED at
 *                        {@code failedAtMs}, and no heartbeat brings it back
 */
public record NodeHealth(WorkerState resumeState, long lastHeartbeatMs, long suspectedAtMs, long failedAtMs,
                         long recoveredAtMs, double phi, String cause, boolean byzantine) {

    public static final NodeHealth NONE = new NodeHealth(null, 0, 0, 0, 0, 0.0, null, false);

    /** Whether the node is FAILED because it went silent (rather than because its load failed or it computed wrong). */
    public boolean failedByDetector() {
        return failedAtMs > 0 && recoveredAtMs < failedAtMs && !byzantine;
    }

    NodeHealth suspected(WorkerState from, long lastHeartbeat, double atPhi, String why, long atMs) {
        return new NodeHealth(from, lastHeartbeat, atMs, failedAtMs, recoveredAtMs, atPhi, why, byzantine);
    }

    NodeHealth resumingAs(WorkerState state) {
        return new NodeHealth(state, lastHeartbeatMs, suspectedAtMs, failedAtMs, recoveredAtMs, phi, cause, byzantine);
    }

    NodeHealth cleared(long lastHeartbeat) {
        return new NodeHealth(null, lastHeartbeat, suspectedAtMs, failedAtMs, recoveredAtMs, phi, cause, byzantine);
    }

    NodeHealth failed(long lastHeartbeat, double atPhi, String why, long atMs) {
        return new NodeHealth(resumeState, lastHeartbeat, suspectedAtMs, atMs, recoveredAtMs, atPhi, why, byzantine);
    }

    NodeHealth byzantine(String why, long atMs) {
        return new NodeHealth(null, lastHeartbeatMs, suspectedAtMs, atMs, recoveredAtMs, phi, why, true);
    }

    NodeHealth recovered(long lastHeartbeat, long atMs) {
        return new NodeHealth(null, lastHeartbeat, suspectedAtMs, failedAtMs, atMs, phi, cause, byzantine);
    }
}
