package io.butterfly.coordinator.bootstrap;

import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterConfig;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.model.ModelCatalog;
import io.butterfly.coordinator.model.RegistryUnavailableException;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.planning.PartitionPlan;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.ListMembersRequest;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import jakarta.annotation.PreDestroy;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * Drives the cluster from UNINITIALIZED to READY (initialization-and-bootstrap.md): fetch the
 * model's manifest, wait for the expected workers to join, plan contiguous layer ranges weighted by
 * measured capacity, assign them (fenced by epoch) and let the load reports complete the picture.
 */
@Component
public class BootstrapOrchestrator {

    private static final Logger log = LoggerFactory.getLogger(BootstrapOrchestrator.class);
    /** How often discovery is asked for members while workers are awaited (only during a bootstrap). */
    private static final long POLL_MILLIS = 50;

    private final CoordinatorProperties props;

    private final AssignmentAddresses addresses;
    private final ControlLog control;
    private final ModelCatalog catalog;
    private final AssignmentPlanning planning;
    private final WorkerChannels workers;
    private final Clock clock;
    private final ManagedChannel discovery;
    private final LeaderTakeover takeover;
    private volatile Thread thread;
    private volatile boolean retrying;

    public BootstrapOrchestrator(CoordinatorProperties props, ControlLog control, ModelCatalog catalog,
                                 AssignmentPlanning planning, WorkerChannels workers, Clock clock,
                                 LeaderTakeover takeover, AssignmentAddresses addresses) {
        this.addresses = addresses;
        this.takeover = takeover;
        this.props = props;
        this.control = control;
        this.catalog = catalog;
        this.planning = planning;
        this.workers = workers;
        this.clock = clock;
        this.discovery = GrpcChannels.open(props.discoveryHost(), props.discoveryPort());
    }

    /** Leader-only work: runs while this replica leads the control log, stops when it loses leadership. */
    @EventListener(ApplicationReadyEvent.class)
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
                control.submit(new ClusterCommand.Bootstrap(props.modelId(), props.expectedWorkers(), clock.millis()));
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
            List<Member> members = awaitWorkers(props.expectedWorkers());
            while (!assign(model, members)) {
                // InsufficientResources (§7.6): nothing assigned; plan again once more capacity has joined.
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
                log.error("refusing the manifest of model '{}': {}: {}", props.modelId(), e.code(), e.getMessage());
            } catch (RegistryUnavailableException e) {
                log.info("waiting for the registry to serve model '{}': {}", props.modelId(), e.getMessage());
            } catch (Exception e) {
                log.warn("fetching model '{}' failed: {}", props.modelId(), e.toString());
            }
            Thread.sleep(1000);
        }
    }

    /** Commits the cluster configuration (§5.3 ConfigChange) when it differs from the committed one. */
    private void commitConfig() {
        ClusterState s = control.state();
        var v = ControlEnvelopes.CURRENT_VERSION;
        // No stage replicas yet: every stage is needed (quorum = pipeline size) and no failure is tolerated.
        ClusterConfig config = new ClusterConfig(props.clusterName(), Math.max(1, s.expectedWorkers()), 0,
                s.nodes().size(), v.getMajor() + "." + v.getMinor() + "." + v.getPatch());
        if (!config.equals(s.config())) {
            control.submit(new ClusterCommand.ConfigChange(config, clock.millis()));
        }
    }

    /** Polls discovery until {@code wanted} workers have joined (recording each join); the first {@code wanted} by id. */
    private List<Member> awaitWorkers(int wanted) throws InterruptedException {
        long lastLog = 0;
        while (true) {
            List<Member> found;
            try {
                found = DiscoveryServiceGrpc.newBlockingStub(discovery).withDeadlineAfter(2, TimeUnit.SECONDS)
                        .listMembers(ListMembersRequest.newBuilder().setRole(NodeRole.WORKER).build())
                        .getMembersList();
            } catch (StatusRuntimeException e) {
                found = List.of();
                log.debug("discovery not reachable yet: {}", e.getStatus());
            }
            ClusterState state = control.state();
            for (Member m : found) {
                if (!state.nodes().containsKey(m.getNodeId())) {
                    control.submit(new ClusterCommand.NodeJoined(toNodeInfo(m), clock.millis()));
                }
            }
            commitConfig();
            if (found.size() >= wanted) {
                return found.stream().sorted((a, b) -> a.getNodeId().compareTo(b.getNodeId()))
                        .limit(wanted).toList();
            }
            if (clock.millis() - lastLog > 5000) {
                lastLog = clock.millis();
                log.info("waiting for workers: {}/{} joined", found.size(), wanted);
            }
            Thread.sleep(POLL_MILLIS);
        }
    }

    /** Plans and assigns; false (nothing sent) when the members cannot hold the model (the state says why). */
    private boolean assign(ServedModel model, List<Member> members) throws InterruptedException {
        PartitionPlan plan = planning.plan(model, members);
        if (plan == null) {
            return false;
        }
        long epoch = control.state().epoch() + 1;
        control.submit(new ClusterCommand.PartitionsAssigned(epoch, plan.stages(), clock.millis()));
        Map<String, Member> byId = new java.util.HashMap<>();
        members.forEach(m -> byId.put(m.getNodeId(), m));
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
            Member m = byId.get(stage.nodeId());
            log.info("assigning layers [{}, {}) of {} to {} (epoch {})", stage.layerStart(), stage.layerEnd(),
                    model.manifest().modelId(), stage.nodeId(), epoch);
            AssignPartitionRequest request = addresses.address(AssignPartitionRequest.newBuilder())
                    .setModelId(model.manifest().modelId())
                    .setLayers(LayerRange.newBuilder().setStart(stage.layerStart()).setEnd(stage.layerEnd()))
                    .setHasEmbedding(stage.hasEmbedding())
                    .setHasHead(stage.hasHead())
                    .setEpoch(epoch)
                    .setTerm(control.leadership().current().term()) // fencing: workers refuse older terms
                    .build();
            sent.add(senders.submit(() -> {
                assignWithRetry(m, request);
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

    private void assignWithRetry(Member m, AssignPartitionRequest request) throws InterruptedException {
        for (int attempt = 1; ; attempt++) {
            try {
                WorkerServiceGrpc.newBlockingStub(workers.channel(m.getNodeId(), m.getHost(), m.getGrpcPort()))
                        .withDeadlineAfter(10, TimeUnit.SECONDS)
                        .assignPartition(request);
                return;
            } catch (StatusRuntimeException e) {
                if (attempt >= 10) {
                    control.submit(new ClusterCommand.LoadFailed(m.getNodeId(), request.getEpoch(), "TIMEOUT",
                            "assignment not accepted after " + attempt + " attempts: " + e.getStatus(), clock.millis()));
                    return;
                }
                Thread.sleep(Math.min(200L << attempt, 5000));
            }
        }
    }

    /** Memory a worker offers for its partition: its limit where it set one, else all its memory. */
    static long usableMemory(io.butterfly.proto.common.v1.NodeCapabilities c) {
        long limit = c.getMemoryLimitBytes();
        return limit > 0 ? Math.min(limit, c.getMemoryBytes()) : c.getMemoryBytes();
    }

    static NodeInfo toNodeInfo(Member m) {
        return new NodeInfo(m.getNodeId(), "worker", m.getHost(), m.getGrpcPort(), m.getHttpPort(),
                m.getCapabilities().getCpuCores(), usableMemory(m.getCapabilities()),
                m.getCapabilities().getMeasuredGflops(), m.getCapabilities().getDevice());
    }

    @PreDestroy
    void stop() {
        Thread t = thread;
        if (t != null) {
            t.interrupt();
        }
        GrpcChannels.close(discovery);
    }
}
