package io.butterfly.coordinator.liveness;

/**
 * What the detector knows about one node at one instant.
 *
 * @param phi              current suspicion level
 * @param lastHeartbeatMs  arrival time of the last heartbeat, -1 if none
 * @param connected        whether a heartbeat stream from the node is open
 * @param disconnectedAtMs when the last open stream closed (-1 while connected or never connected)
 * @param loadedEpoch      epoch of the partition the node last said it holds READY (0 = none)
 */
public record NodeObservation(double phi, long lastHeartbeatMs, boolean connected, long disconnectedAtMs,
                              long loadedEpoch) {

    public static final NodeObservation UNKNOWN = new NodeObservation(0.0, -1, false, -1, 0);

    public boolean everHeard() {
        return lastHeartbeatMs >= 0;
    }

    /** The same observation judged at another suspicion level. */
    public NodeObservation withPhi(double otherPhi) {
        return new NodeObservation(otherPhi, lastHeartbeatMs, connected, disconnectedAtMs, loadedEpoch);
    }
}
