package io.butterfly.coordinator.bootstrap;

import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.integrity.CrossValidation;
import io.butterfly.coordinator.integrity.PartitionReport;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.SystemState;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs the cross-validation (docs/bootstrap-protocol.md §6.5) whenever every stage of the current epoch is
 * loaded but its weights are not validated yet: ChecksumRequest to each stage, the reports checked and
 * the Merkle root rebuilt ({@link CrossValidation}), the ValidationResult logged (only VALID lets the
 * cluster become READY) and sent back to the workers. A validation with missing reports is retried; a
 * disagreeing one is final for that epoch (the state names node and file).
 */
public class CrossValidator implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(CrossValidator.class);
    private static final long RETRY_MILLIS = 2_000;

    private final ControlLog control;
    private final ModelCatalog catalog;
    private final Workers workers;
    private final Clock clock;
    private long lastAttemptEpoch = -1;
    private long lastAttemptAtMs;
    /** Runs a validation asked for by {@link #nudge} (the RPCs block), off the caller's thread. */
    private final ExecutorService nudges = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "cross-validation");
        t.setDaemon(true);
        return t;
    });

    public CrossValidator(ControlLog control, ModelCatalog catalog, Workers workers, Clock clock) {
        this.control = control;
        this.catalog = catalog;
        this.workers = workers;
        this.clock = clock;
    }

    /**
     * Validates now if every stage has loaded: called when a stage reports READY, so the last one's report
     * does not wait for the periodic check (up to 200 ms of a ~4 s cold bootstrap).
     */
    public void nudge() {
        nudges.execute(this::validateWhenLoaded);
    }

    @Override
    public void close() {
        nudges.shutdownNow();
    }

    public synchronized void validateWhenLoaded() {
        if (!control.leadership().leading()) {
            return; // the leader validates; a follower's result would only duplicate (or contradict) it
        }
        ClusterState s = control.state();
        ServedModel model = catalog.served();
        boolean waiting = s.system() == SystemState.BOOTSTRAPPING || s.system() == SystemState.DEGRADED;
        if (model == null || !waiting || !s.pipelineReady() || s.checks().weightsValidFor(s.epoch())) {
            return;
        }
        WeightValidation previous = s.checks().validation();
        if (previous != null && previous.epoch() == s.epoch() && previous.status() == WeightValidation.Status.INVALID) {
            return; // final for this epoch: the loaded bytes will not change by asking again
        }
        if (lastAttemptEpoch == s.epoch() && clock.millis() - lastAttemptAtMs < RETRY_MILLIS) {
            return;
        }
        lastAttemptEpoch = s.epoch();
        lastAttemptAtMs = clock.millis();
        validate(s, model);
    }

    private void validate(ClusterState s, ServedModel model) {
        List<StageAssignment> stages = new ArrayList<>();
        for (String id : s.pipeline()) {
            NodeRecord n = s.nodes().get(id);
            stages.add(new StageAssignment(id, n.layerStart(), n.layerEnd(), n.hasEmbedding(), n.hasHead()));
        }
        Map<String, CompletableFuture<PartitionReport>> pending = new LinkedHashMap<>();
        for (String id : s.pipeline()) {
            NodeRecord n = s.nodes().get(id);
            pending.put(id, CompletableFuture.supplyAsync(() -> workers.checksums(n.info(), s.epoch(),
                    Duration.ofSeconds(60))));
        }
        Map<String, PartitionReport> reports = new LinkedHashMap<>();
        pending.forEach((id, f) -> {
            try {
                reports.put(id, f.join());
            } catch (RuntimeException e) {
                Throwable cause = e.getCause() instanceof WorkerCallFailedException failed ? failed : e;
                log.warn("no checksum report from {} for epoch {}: {}", id, s.epoch(), cause.toString());
            }
        });
        Manifest manifest = model.manifest();
        WeightValidation v = CrossValidation.validate(s.epoch(), manifest.files(), manifest.merkleRoot(),
                stages, reports, ownFiles(manifest), clock.millis());
        try {
            control.submit(new ClusterCommand.WeightsValidated(v, v.atMs()));
        } catch (IllegalTransitionException e) {
            log.info("validation of epoch {} not recorded: {}", v.epoch(), e.getMessage());
            return;
        }
        if (v.status() == WeightValidation.Status.VALID) {
            log.info("weights cross-validated (epoch {}): merkle root {} equals the manifest's, partition root {}",
                    v.epoch(), v.merkleRoot(), v.partitionRoot());
            // docs/bootstrap-protocol.md §5.3 Checkpoint: this epoch serves these validated weights.
            try {
                control.submit(new ClusterCommand.Checkpoint(v.epoch(), v.merkleRoot(), clock.millis()));
            } catch (IllegalArgumentException | IllegalTransitionException e) {
                log.info("checkpoint of epoch {} not recorded: {}", v.epoch(), e.getMessage());
            }
        } else {
            log.error("weights cross-validation {} (epoch {}): {}", v.status(), v.epoch(), v.problems());
        }
        broadcast(s, v);
    }

    /** ValidationResult to every stage (docs/bootstrap-protocol.md §6.5); a worker that misses it only loses the log line. */
    private void broadcast(ClusterState s, WeightValidation v) {
        for (String id : s.pipeline()) {
            try {
                workers.announceValidation(s.nodes().get(id).info(), v, Duration.ofSeconds(5));
            } catch (WorkerCallFailedException e) {
                log.debug("validation result not delivered to {}: {}", id, e.getMessage());
            }
        }
    }

    /** Digests of the coordinator's own copies (config, tokenizer, chat template), hashed from its disk like the workers do. */
    private Map<String, String> ownFiles(Manifest manifest) {
        Path dir = catalog.directory(manifest.modelId());
        Map<String, String> out = new LinkedHashMap<>();
        for (ManifestFile f : manifest.files()) {
            if (!f.neededByCoordinator()) {
                continue;
            }
            Path p = dir.resolve(f.name());
            if (Files.isRegularFile(p)) {
                try {
                    out.put(f.name(), Sha256.hexOfFile(p));
                } catch (IOException e) {
                    log.warn("cannot hash {}: {}", p, e.toString());
                }
            }
        }
        return out;
    }
}
