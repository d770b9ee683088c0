package io.butterfly.coordinator.bootstrap;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterConfig;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.RegistryUnavailableException;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.planning.PartitionPlan;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.SystemState;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Drives the cluster from UNINITIALIZED to READY (docs/initialization-and-bootstrap.md): fetch the
 * model's manifest, wait for the expected workers to join, plan contiguous layer ranges weighted by
 * measured capacity, assign them (fenced by epoch) and let the load reports complete the picture.
 */
public class BootstrapOrchestrator implements AutoCloseable {

    /**
     * @param modelId         the model to serve (as the registry knows it)
     * @param expectedWorkers the workers awaited before the first plan
     * @param clusterName     the cluster's name in its committed configuration
     * @param protocolVersion the protocol version (major.minor.patch) this coordinator speaks, committed with it
     */
    public record Settings(String modelId, int expectedWorkers, String clusterName, String protocolVersion) {
    }

    private static final Logger log = LoggerFactory.getLogger(BootstrapOrchestrator.class);
    /** How often discovery is asked for members while workers are awaited (only during a bootstrap). */
    private static final long POLL_MILLIS = 50;

    private final Settings settings;
    private final ControlLog control;
    private final ModelCatalog catalog;
    private final AssignmentPlanning planning;
    private final Workers workers;
    private final WorkerDirectory directory;
    private final Clock clock;
    private final LeaderTakeover takeover;
    private volatile Thread thread;
    private volatile boolean retrying;

    public BootstrapOrchestrator(Settings settings, ControlLog control, ModelCatalog catalog,
                                 AssignmentPlanning planning, Workers workers, WorkerDirectory directory, Clock clock,
                                 LeaderTakeover takeover) {
        this.takeover = takeover;
        this.settings = settings;
        this.control = control;
        this.catalog = catalog;
        this.planning = planning;
        this.workers = workers;
        this.directory = directory;
        this.clock = clock;
    }

    /** Leader-only work: runs while this replica leads the control log, stops when it loses leadership. */
    public void start() {
        control.leadership().addListener(l -> onLeadership(l.leading()));
    }

    private synchronized void onLeadership(boolean leading) {
        Thread previous = thread;
        if (leading) {
            // Leadership regained: the previous run (interrupted when it was lost) ends first; the new one
            // continues from the replicated state.
            thread = new Thread(() -> {
                try {
                    if (previous != null) {
                        previous.join();
                    }
                } catch (InterruptedException e) {
                    return;
                }
                run();
            }, "bootstrap");
            thread.setDaemon(true);
            thread.start();
        } else if (previous != null) {
            previous.interrupt();
        }
    }

    /**
     * Bootstraps while this replica leads. A command the log could not commit in time (an overloaded machine,
     * a lost quorum) is retried from the replicated state, not given up: nothing else would restart it.
     */
    private void run() {
        retrying = false;
        while (!Thread.currentThread().isInterrupted() && control.leadership().current().leading()) {
            try {
                bootstrap();
                return;
            } catch (ControlLogUnavailableException e) {
                // The command may still commit (e.g. the assignment): once it has, the workers are told again.
                retrying = true;
                log.warn("bootstrap paused, the control log is unavailable ({}); retrying", e.getMessage());
                try {
                    Thread.sleep(1000);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    private void bootstrap() {
        try {
            // A leader elected mid-bootstrap continues from the replicated state.
            if (control.state().system() == SystemState.UNINITIALIZED) {
                control.submit(new ClusterCommand.Bootstrap(settings.modelId(), settings.expectedWorkers(), clock.millis()));
            }
            commitConfig();
            if (control.state().epoch() > 0) {
                if (retrying) {
                    takeover.reannounce(); // an assignment committed while its sender gave up on it
                }
                return; // partitions are assigned already: LeaderTakeover re-announces them with this term
            }
            ServedModel model = fetchModel();
            control.submit(new ClusterCommand.ModelResolved(model.manifest().modelId(),
                    model.manifest().merkleRoot(), clock.millis()));
            List<NodeInfo> members = awaitWorkers(settings.expectedWorkers());
            while (!assign(model, members)) {
                // InsufficientResources (docs/initialization-and-bootstrap.md §7.6): nothing assigned; plan again once more capacity has joined.
                members = awaitWorkers(members.size() + 1);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ControlLogUnavailableException e) {
            throw e;
        } catch (RuntimeException e) {
            log.warn("bootstrap stopped (leadership lost): {}", e.toString());
        }
    }

    private ServedModel fetchModel() throws InterruptedException {
        while (true) {
            try {
                ServedModel model = catalog.load();
                log.info("serving model {} ({} layers, merkle root {})", model.manifest().modelId(),
                        model.manifest().numLayers(), model.manifest().merkleRoot());
                return model;
            } catch (io.butterfly.common.error.ButterflyException e) {
                // An untrusted or forged manifest is never used; keep asking in case the registry is re-keyed.
                log.error("refusing the manifest of model '{}': {}: {}", settings.modelId(), e.code(), e.getMessage());
            } catch (RegistryUnavailableException e) {
                log.info("waiting for the registry to serve model '{}': {}", settings.modelId(), e.getMessage());
            } catch (Exception e) {
                log.warn("fetching model '{}' failed: {}", settings.modelId(), e.toString());
            }
            Thread.sleep(1000);
        }
    }

    /** Commits the cluster configuration (docs/bootstrap-protocol.md §5.3 ConfigChange) when it differs from the committed one. */
    private void commitConfig() {
        ClusterState s = control.state();
        // No stage replicas yet: every stage is needed (quorum = pipeline size) and no failure is tolerated.
        ClusterConfig config = new ClusterConfig(settings.clusterName(), Math.max(1, s.expectedWorkers()), 0,
                s.nodes().size(), settings.protocolVersion());
        if (!config.equals(s.config())) {
            control.submit(new ClusterCommand.ConfigChange(config, clock.millis()));
        }
    }

    /** Polls discovery until {@code wanted} workers have joined (recording each join); the first {@code wanted} by id. */
    private List<NodeInfo> awaitWorkers(int wanted) throws InterruptedException {
        long lastLog = 0;
        while (true) {
            List<NodeInfo> found = directory.joinedWorkers();
            ClusterState state = control.state();
            for (NodeInfo m : found) {
                if (!state.nodes().containsKey(m.nodeId())) {
                    control.submit(new ClusterCommand.NodeJoined(m, clock.millis()));
                }
            }
            commitConfig();
            if (found.size() >= wanted) {
                return found.stream().sorted(Comparator.comparing(NodeInfo::nodeId)).limit(wanted).toList();
            }
            if (clock.millis() - lastLog > 5000) {
                lastLog = clock.millis();
                log.info("waiting for workers: {}/{} joined", found.size(), wanted);
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /** Plans and assigns; false (nothing sent) when the members cannot hold the model (the state says why). */
    private boolean assign(ServedModel model, List<NodeInfo> members) throws InterruptedException {
        PartitionPlan plan = planning.plan(model, members);
        if (plan == null) {
            return false;
        }
        long epoch = control.state().epoch() + 1;
        control.submit(new ClusterCommand.PartitionsAssigned(epoch, plan.stages(), clock.millis()));
        Map<String, NodeInfo> byId = new HashMap<>();
        members.forEach(m -> byId.put(m.nodeId(), m));
        // Sent to all workers at once: each starts fetching as soon as it has its range, instead of
        // waiting for the workers before it to answer (seconds apiece on a busy machine).
        ExecutorService senders = Executors.newFixedThreadPool(
                plan.stages().size(), r -> {
                    Thread t = new Thread(r, "assign-partition");
                    t.setDaemon(true);
                    return t;
                });
        List<Future<?>> sent = new ArrayList<>();
        for (StageAssignment stage : plan.stages()) {
            NodeInfo m = byId.get(stage.nodeId());
            log.info("assigning layers [{}, {}) of {} to {} (epoch {})", stage.layerStart(), stage.layerEnd(),
                    model.manifest().modelId(), stage.nodeId(), epoch);
            // Fenced: workers refuse older terms.
            Assignment assignment = Assignment.of(model.manifest().modelId(), stage, epoch,
                    control.leadership().current().term());
            sent.add(senders.submit(() -> {
                assignWithRetry(m, assignment);
                return null;
            }));
        }
        try {
            for (Future<?> f : sent) {
                f.get();
            }
        } catch (ExecutionException e) {
            throw new IllegalStateException("sending an assignment failed", e.getCause());
        } finally {
            senders.shutdownNow();
        }
        return true;
    }

    private void assignWithRetry(NodeInfo m, Assignment assignment) throws InterruptedException {
        for (int attempt = 1; ; attempt++) {
            try {
                workers.assign(m, assignment, Duration.ofSeconds(10));
                return;
            } catch (WorkerCallFailedException e) {
                if (attempt >= 10) {
                    control.submit(new ClusterCommand.LoadFailed(m.nodeId(), assignment.epoch(), "TIMEOUT",
                            "assignment not accepted after " + attempt + " attempts: " + e.getMessage(), clock.millis()));
                    return;
                }
                Thread.sleep(Math.min(200L << attempt, 5000));
            }
        }
    }

    @Override
    public void close() {
        Thread t = thread;
        if (t != null) {
            t.interrupt();
        }
    }
}
