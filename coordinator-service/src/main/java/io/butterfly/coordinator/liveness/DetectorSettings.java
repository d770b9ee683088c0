package io.butterfly.coordinator.liveness;

/**
 * Tuning of the failure detector. Defaults (see {@code LivenessProperties}) assume 100 ms heartbeats.
 *
 * @param failureThreshold           phi at which a SUSPECT node is declared FAILED (Akka/Cassandra use 8)
 * @param suspicionThreshold         phi at which a JOINED/READY node becomes SUSPECT; below failureThreshold
 * @param windowSize                 number of inter-arrival times kept per node
 * @param minStdDeviationMs          floor of the standard deviation, so regular beats do not make phi hair-triggered
 * @param acceptableHeartbeatPauseMs silence tolerated on top of the mean interval (GC, stalls, a paused process)
 * @param firstHeartbeatEstimateMs   expected interval used before any real interval was measured
 * @param reconnectGraceMs           how long a node whose heartbeat stream closed may take to reconnect before it
 *                                   is declared FAILED (a killed process's socket closes at once; a paused
 *                                   process keeps it open and is judged by phi alone)
 */
public record DetectorSettings(double failureThreshold, double suspicionThreshold, int windowSize,
                               long minStdDeviationMs, long acceptableHeartbeatPauseMs,
                               long firstHeartbeatEstimateMs, long reconnectGraceMs) {

    public DetectorSettings {
        if (!(failureThreshold > 0)) {
            throw new IllegalArgumentException("failureThreshold must be > 0, was " + failureThreshold);
        }
        if (!(suspicionThreshold > 0 && suspicionThreshold <= failureThreshold)) {
            throw new IllegalArgumentException("suspicionThreshold must be in (0, failureThreshold], was "
                    + suspicionThreshold);
        }
        if (windowSize < 2) {
            throw new IllegalArgumentException("windowSize must be at least 2, was " + windowSize);
        }
        if (minStdDeviationMs <= 0) {
            throw new IllegalArgumentException("minStdDeviationMs must be > 0, was " + minStdDeviationMs);
        }
        if (acceptableHeartbeatPauseMs < 0) {
            throw new IllegalArgumentException("acceptableHeartbeatPauseMs must be >= 0, was "
                    + acceptableHeartbeatPauseMs);
        }
        if (firstHeartbeatEstimateMs <= 0) {
            throw new IllegalArgumentException("firstHeartbeatEstimateMs must be > 0, was " + firstHeartbeatEstimateMs);
        }
        if (reconnectGraceMs < 0) {
            throw new IllegalArgumentException("reconnectGraceMs must be >= 0, was " + reconnectGraceMs);
        }
    }
}
