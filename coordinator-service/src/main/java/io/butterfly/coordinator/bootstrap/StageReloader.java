package io.butterfly.coordinator.bootstrap;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.LivenessMonitor;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * When a worker that was declared FAILED comes back without its partition (it was restarted), sends it
 * the assignment it already has in the current epoch again, so it reloads its stage and the system can
 * leave DEGRADED. A stage whose load failed for a reason a new attempt can mend (the registry was away
 * longer than the worker's retries, a timeout) is sent its assignment again every minute, in DEGRADED and
 * during the bootstrap alike; one refused for bad or untrusted data or too little memory is left to an
 * operator. This is the minimal same-node recovery; moving a stage to another node is not done here.
 */
public class StageReloader implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(StageReloader.class);
    private static final int MAX_ATTEMPTS = 30;
    private static final long SCAN_RELOAD_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final long LOAD_RETRY_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(60);
    /** Load failures another attempt cannot mend: the same bytes, keys or memory would fail it again. */
    private static final Set<String> PERMANENT_LOAD_FAILURES = Set.of("CHECKSUM_MISMATCH", "INVALID_MANIFEST",
            "INVALID_SIGNATURE", "UNTRUSTED_PUBLISHER", "MERKLE_ROOT_MISMATCH", "INSUFFICIENT_MEMORY", "VALIDATION_FAILED");
    /** When {@link #reloadUnloadedStages} last asked each node (scheduler thread only). */
    private final Map<String, Long> lastScanReload = new HashMap<>();
    /** Since when each stage has been seen JOINED and UNLOADED while bootstrapping (scheduler thread only). */
    private final Map<String, Long> unloadedSince = new HashMap<>();
    /** Nodes whose reload is queued or running. */
    private final Set<String> reloading = ConcurrentHashMap.newKeySet();
    /** The scan's clock; a test moves it past the interval instead of waiting 30 s. */
    LongSupplier nanoTime = System::nanoTime;

    private final ControlLog control;
    private final Workers workers;
    private final ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "stage-reloader");
        t.setDaemon(true);
        return t;
    });

    public StageReloader(ControlLog control, Workers workers, LivenessMonitor monitor) {
        this.control = control;
        this.workers = workers;
        monitor.onVerdict(this::onVerdict);
    }

    private void onVerdict(ClusterCommand c) {
        if (c instanceof ClusterCommand.NodeRecovered r && !r.partitionIntact()) {
            queueReload(r.nodeId());
        }
    }

    /**
     * Queues a node's reload unless one is queued or running: a reload retries for up to a minute (longer if
     * every attempt waits out its deadline), and a node that stays unloaded must not pile up one more per scan
     * ahead of other nodes' reloads on the single thread.
     */
    private void queueReload(String nodeId) {
        if (reloading.add(nodeId)) {
            executor.execute(() -> {
                try {
                    reload(nodeId);
                } finally {
                    reloading.remove(nodeId);
                }
            });
        }
    }

    /**
     * The same from the replicated state, on the leader: a verdict whose submission timed out but committed, or
     * one recorded by a deposed leader, never reached {@link #onVerdict} here, and its stage would stay
     * unloaded with the system DEGRADED. Stages whose load failed for a reason worth another attempt are
     * retried here too, during the bootstrap as well: nothing else would ever ask them again.
     */
    public void reloadUnloadedStages() {
        ClusterState s = control.state();
        boolean degraded = s.system() == SystemState.DEGRADED;
        boolean bootstrapping = s.system() == SystemState.BOOTSTRAPPING && s.epoch() > 0;
        if (!control.leadership().leading() || !(degraded || bootstrapping)) {
            return;
        }
        long now = nanoTime.getAsLong();
        unloadedSince.keySet().removeIf(id -> !bootstrapping || s.nodes().get(id) == null || !joinedUnloaded(s.nodes().get(id)));
        for (String id : s.pipeline()) {
            NodeRecord n = s.nodes().get(id);
            if (n == null) {
                continue;
            }
            long interval;
            if (bootstrapping && joinedUnloaded(n)) {
                // Normally loading within a second of its assignment; still unloaded a minute later, it never got
                // it (the bootstrap's sends all failed, and so did logging that): send it again, once a minute.
                long since = unloadedSince.computeIfAbsent(id, k -> now);
                if (now - since <= LOAD_RETRY_INTERVAL_NANOS) {
                    continue;
                }
                interval = LOAD_RETRY_INTERVAL_NANOS;
            } else if (degraded && joinedUnloaded(n)) {
                interval = SCAN_RELOAD_INTERVAL_NANOS;
            } else if (retryableLoadFailure(n)) {
                interval = LOAD_RETRY_INTERVAL_NANOS;
            } else {
                continue;
            }
            Long last = lastScanReload.get(id);
            if (last == null || now - last > interval) {
                lastScanReload.put(id, now);
                queueReload(id);
            }
        }
    }

    /** Whether a reload of {@code nodeId} is queued or running (a scan skips the node meanwhile). */
    boolean reloading(String nodeId) {
        return reloading.contains(nodeId);
    }

    private static boolean joinedUnloaded(NodeRecord n) {
        return n.state() == WorkerState.JOINED && n.partition() == PartitionState.UNLOADED;
    }

    /** FAILED by its own load (not by the failure detector: that node is gone) for a reason worth retrying. */
    private static boolean retryableLoadFailure(NodeRecord n) {
        return n.state() == WorkerState.FAILED && n.partition() == PartitionState.FAILED
                && !n.health().failedByDetector()
                // Set.of refuses contains(null): a LoadFailed may be logged without a code.
                && (n.failureCode() == null || !PERMANENT_LOAD_FAILURES.contains(n.failureCode()));
    }

    private void reload(String nodeId) {
        for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
            ClusterState s = control.state();
            NodeRecord n = s.nodes().get(nodeId);
            if (n == null || n.layerStart() == null || !s.pipeline().contains(nodeId)
                    || !(joinedUnloaded(n) || retryableLoadFailure(n))) {
                return; // reassigned, failed again or already loading: nothing (more) to do
            }
            // Fencing: workers refuse older terms.
            Assignment assignment = Assignment.current(s, n, control.leadership().current().term());
            // The connection backed off while the worker was down; it is back now (it heartbeats).
            workers.reconnect(n.info());
            try {
                workers.assign(n.info(), assignment, Duration.ofSeconds(10));
                if (retryableLoadFailure(n)) {
                    log.info("sent {} its assignment of layers [{}, {}) again to retry its failed load ({}: {}) (epoch {})",
                            nodeId, n.layerStart(), n.layerEnd(), n.failureCode(), n.failureMessage(), s.epoch());
                } else {
                    log.info("sent {} its assignment of layers [{}, {}) again: it is joined without them (epoch {})",
                            nodeId, n.layerStart(), n.layerEnd(), s.epoch());
                }
                return;
            } catch (WorkerCallFailedException e) {
                log.info("reload on {} not accepted yet (attempt {}): {}", nodeId, attempt, e.getMessage());
            }
            try {
                Thread.sleep(Math.min(250L * attempt, 2_000));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
