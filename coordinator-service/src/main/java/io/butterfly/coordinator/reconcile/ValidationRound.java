package io.butterfly.coordinator.reconcile;

import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.integrity.CrossValidation;
import io.butterfly.coordinator.integrity.PartitionReport;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.planning.StageAssignment;
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
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One cross-validation of an epoch's loaded weights (docs/bootstrap-protocol.md §6.5): ChecksumRequest to each stage,
 * the reports checked and the Merkle root rebuilt ({@link CrossValidation}), the verdict committed (only VALID lets the
 * cluster be READY, with a Checkpoint) and sent back to the workers.
 */
final class ValidationRound {

    private static final Logger log = LoggerFactory.getLogger(ValidationRound.class);

    private final ControlLog control;
    private final Workers workers;
    private final Clock clock;
    private final Executor calls;

    ValidationRound(ControlLog control, Workers workers, Clock clock, Executor calls) {
        this.control = control;
        this.workers = workers;
        this.clock = clock;
        this.calls = calls;
    }

    /**
     * Validates the current epoch of {@code s}; whether the verdict was final (VALID or INVALID, committed) rather than
     * INCOMPLETE (a stage did not report: tried again).
     *
     * @param modelDir where this coordinator keeps its own copies of the model's config and tokenizer, which it hashes
     */
    boolean run(ClusterState s, ServedModel model, Path modelDir) {
        List<StageAssignment> stages = new ArrayList<>();
        Map<String, CompletableFuture<PartitionReport>> pending = new LinkedHashMap<>();
        for (String id : s.pipeline()) {
            NodeRecord n = s.nodes().get(id);
            stages.add(new StageAssignment(id, n.layerStart(), n.layerEnd(), n.hasEmbedding(), n.hasHead()));
            pending.put(id, CompletableFuture.supplyAsync(() -> workers.checksums(n.info(), s.epoch(),
                    Duration.ofSeconds(60)), calls));
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
                stages, reports, ownFiles(manifest, modelDir), clock.millis());
        try {
            control.submit(new ClusterCommand.WeightsValidated(v, v.atMs()));
        } catch (IllegalTransitionException e) {
            log.info("validation of epoch {} not recorded: {}", v.epoch(), e.getMessage());
            return false;
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
        return v.status() != WeightValidation.Status.INCOMPLETE;
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
    private static Map<String, String> ownFiles(Manifest manifest, Path dir) {
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
