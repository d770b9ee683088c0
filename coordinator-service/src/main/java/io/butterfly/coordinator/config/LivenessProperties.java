package io.butterfly.coordinator.config;

import io.butterfly.coordinator.control.LivenessMonitor;
import io.butterfly.coordinator.liveness.DetectorSettings;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Failure-detector settings (phi accrual over 100 ms heartbeats). The defaults are tuned with
 * {@code ./butterfly bench-detect}: a killed worker is FAILED well under a second (its stream closes),
 * a worker paused for one second is at most SUSPECT, and a silent-but-connected worker is FAILED
 * after about 1.4 s of silence (phi 8 with mean 100 ms + 800 ms pause, std dev 100 ms).
 *
 * @param failureThreshold        phi at which a SUSPECT node is FAILED
 * @param suspicionThreshold      phi at which a JOINED/READY node becomes SUSPECT
 * @param windowSize              inter-arrival times kept per node
 * @param minStdDeviation         floor of the inter-arrival standard deviation
 * @param acceptableHeartbeatPause silence tolerated on top of the mean interval
 * @param firstHeartbeatEstimate  expected interval before any was measured (the workers' heartbeat period)
 * @param reconnectGrace          time a node whose heartbeat stream closed has to reconnect
 * @param monitorInterval         how often the monitor evaluates phi
 * @param maxLocalPause           a monitor tick this much later than due means the coordinator itself was
 *                                paused (GC, CPU starvation): heartbeats may be queued unread, so that tick
 *                                takes no verdicts (as Cassandra's detector does after a local pause)
 * @param unheardGrace            a node with an assignment that the leader has not heard once in this long after
 *                                it began leading (or after the node's last change) is FAILED: it heartbeats every
 *                                replica its assignment names, reconnecting within 2-3 s of backoff
 * @param loadingHeartbeatPause   silence tolerated, before phi judges it, from a node loading its partition
 *                                (downloading, verifying, loading into the engine, warming up: its CPU, memory and
 *                                garbage collector at their busiest): a false verdict then re-plans its stage onto
 *                                another worker, which is then loading in turn. A crashed loader closes its stream
 *                                and is FAILED as fast as any other
 */
@ConfigurationProperties("butterfly.coordinator.liveness")
public record LivenessProperties(
        @DefaultValue("8.0") double failureThreshold,
        @DefaultValue("4.0") double suspicionThreshold,
        @DefaultValue("200") int windowSize,
        @DefaultValue("100ms") Duration minStdDeviation,
        @DefaultValue("800ms") Duration acceptableHeartbeatPause,
        @DefaultValue("100ms") Duration firstHeartbeatEstimate,
        @DefaultValue("250ms") Duration reconnectGrace,
        @DefaultValue("25ms") Duration monitorInterval,
        @DefaultValue("250ms") Duration maxLocalPause,
        @DefaultValue("10s") Duration unheardGrace,
        @DefaultValue("5s") Duration loadingHeartbeatPause) {

    public DetectorSettings detectorSettings() {
        return new DetectorSettings(failureThreshold, suspicionThreshold, windowSize, minStdDeviation.toMillis(),
                acceptableHeartbeatPause.toMillis(), firstHeartbeatEstimate.toMillis(), reconnectGrace.toMillis());
    }

    public LivenessMonitor.Settings monitorSettings() {
        return new LivenessMonitor.Settings(detectorSettings(), monitorInterval, maxLocalPause, unheardGrace,
                loadingHeartbeatPause);
    }
}
