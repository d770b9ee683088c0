package io.butterfly.coordinator.api.rest;

import io.butterfly.common.api.ClusterHealth;
import io.butterfly.common.api.EpochStatus;
import io.butterfly.common.api.NodeStatus;
import io.butterfly.common.api.SystemStatus;
import io.butterfly.coordinator.api.grpc.LoadTelemetry;
import io.butterfly.coordinator.cluster.ClusterConfig;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.EpochPlan;
import io.butterfly.coordinator.cluster.NodeHealth;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.cluster.Recovery;
import io.butterfly.coordinator.cluster.RecoveryPhase;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.Liveness;
import io.butterfly.coordinator.control.PausedRequests;
import io.butterfly.coordinator.control.PrefixCacheReports;
import io.butterfly.coordinator.control.RaftStatus;
import io.butterfly.coordinator.liveness.NodeObservation;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.stream.IntStream;
import io.butterfly.coordinator.model.ModelCatalog;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** State inspection endpoints (docs/state-machines.md §7.1), answered as the records of {@code io.butterfly.common.api}. */
@RestController
@RequestMapping("/api/v1")
public class SystemStateController {

    private final ControlLog control;
    private final Liveness liveness;
    private final CoordinatorProperties props;
    private final LoadTelemetry telemetry;
    private final ObjectProvider<PausedRequests> paused;
    private final ObjectProvider<ModelCatalog> models;
    private final java.time.Clock clock;
    private final PrefixCacheReports prefixCaches;

    public SystemStateController(ControlLog control, Liveness liveness, CoordinatorProperties props,
                                 LoadTelemetry telemetry, ObjectProvider<PausedRequests> paused,
                                 ObjectProvider<ModelCatalog> models, java.time.Clock clock,
                                 PrefixCacheReports prefixCaches) {
        this.prefixCaches = prefixCaches;
        this.control = control;
        this.liveness = liveness;
        this.props = props;
        this.telemetry = telemetry;
        this.paused = paused;
        this.models = models;
        this.clock = clock;
    }

    @GetMapping("/system/state")
    public SystemStatus systemState() {
        ClusterState s = control.state();
        StageWeights weights = StageWeights.of(models.getIfAvailable(), s);
        return new SystemStatus(s.system().name(), s.epoch(), props.nodeId(), s.modelId(), s.merkleRoot(),
                IntegrityView.feasibility(s.checks()), IntegrityView.validation(s.checks()), s.statusMessage(), nodes(),
                quorum(s), s.pipeline(), s.spares(), s.draining(), recovery(s, weights),
                s.recovery() == null || s.recovery().ongoing() ? null : lastRecovery(s.recovery()),
                s.plans().stream().map(p -> plan(p, weights)).toList(), pausedTasks(s), s.lastAppliedIndex(),
                raft(), config(s.config()), modelError(), prefixCaches(), pipelines(s));
    }

    /** The plan's pipelines, and whether each serves now. */
    private static List<SystemStatus.PipelineStatus> pipelines(ClusterState s) {
        List<List<StageAssignment>> all = s.pipelines();
        List<Boolean> serving = s.servingPipelines();
        return java.util.stream.IntStream.range(0, all.size()).mapToObj(i -> new SystemStatus.PipelineStatus(i,
                all.get(i).stream().map(StageAssignment::nodeId).toList(), serving.get(i))).toList();
    }

    /** Each worker's prefix cache, as its heartbeats last said. */
    private java.util.Map<String, SystemStatus.PrefixCache> prefixCaches() {
        java.util.Map<String, SystemStatus.PrefixCache> out = new java.util.TreeMap<>();
        prefixCaches.reports().forEach((node, r) -> out.put(node, new SystemStatus.PrefixCache(r.enabled(), r.blocks(),
                r.blockTokens(), r.bytes(), r.queriedTokens(), r.hitTokens(), r.hitRate(), r.evictions())));
        return out;
    }

    /** Why the model cannot be served, when the registry said its import failed. */
    private SystemStatus.ModelError modelError() {
        ModelCatalog catalog = models.getIfAvailable();
        return catalog == null ? null : catalog.unavailable()
                .map(u -> new SystemStatus.ModelError(u.cause(), instant(u.sinceMs()))).orElse(null);
    }

    /**
     * The ongoing recovery (null when none): its phase, since when, the epoch that served and the plan being loaded,
     * how far that is, and how many of this replica's requests wait for it.
     */
    private SystemStatus.RecoveryStatus recovery(ClusterState s, StageWeights weights) {
        RecoveryPhase phase = s.recoveryPhase();
        if (phase == null) {
            return null;
        }
        Recovery r = s.recovery();
        boolean planned = s.epoch() > r.fromEpoch();
        PausedRequests p = paused.getIfAvailable();
        return new SystemStatus.RecoveryStatus(phase.name(), phase.recovering(), r.cause(), r.lostNodes(),
                instant(r.startedAtMs()), Math.max(0, clock.millis() - r.startedAtMs()), r.fromEpoch(),
                planned ? s.epoch() : null, planned ? s.plan(s.epoch()).map(e -> plan(e, weights)).orElse(null) : null,
                s.pipeline().stream().filter(id -> s.nodes().get(id).partition() == PartitionState.READY).count() + "/"
                        + s.pipeline().size(), s.statusMessage(), p == null ? null : p.pausedRequests());
    }

    private static SystemStatus.LastRecovery lastRecovery(Recovery r) {
        return new SystemStatus.LastRecovery(r.cause(), r.lostNodes(), instant(r.startedAtMs()), instant(r.endedAtMs()),
                r.endedAtMs() - r.startedAtMs(), r.fromEpoch(), r.toEpoch());
    }

    private static SystemStatus.Plan plan(EpochPlan p, StageWeights weights) {
        return new SystemStatus.Plan(p.epoch(), p.reason(), instant(p.atMs()),
                p.stages().stream().map(a -> stage(a, weights)).toList());
    }

    private static SystemStatus.Stage stage(StageAssignment a, StageWeights weights) {
        return new SystemStatus.Stage(a.nodeId(), List.of(a.layerStart(), a.layerEnd()), a.hasEmbedding(), a.hasHead(),
                weights.format(), weights.bytes(a), a.expertGroups().stream().map(g -> new SystemStatus.ExpertGroup(
                        g.nodeId(), List.of(g.firstExpert(), g.endExpert()))).toList());
    }

    /** The control log's Raft group as this replica sees it (leader, term, own role, peers). */
    private SystemStatus.Raft raft() {
        RaftStatus r = control.raftStatus();
        return new SystemStatus.Raft(r.leaderId(), r.term(), r.selfId(), r.role(), r.lastAppliedIndex(),
                r.logStartIndex(), r.peers());
    }

    @GetMapping("/nodes")
    public List<NodeStatus> nodes() {
        ClusterState s = control.state();
        List<NodeStatus> out = new ArrayList<>();
        out.add(self());
        s.nodes().values().forEach(n -> out.add(node(s, n)));
        return out;
    }

    /** This coordinator replica, as {@code /nodes} lists it first. */
    private NodeStatus self() {
        return new NodeStatus.Coordinator(props.nodeId(), "coordinator", control.raftStatus().role());
    }

    /** Any node {@code /nodes} lists, this coordinator included. */
    @GetMapping("/nodes/{id}/state")
    public NodeStatus nodeState(@PathVariable("id") String id) {
        if (id.equals(props.nodeId())) {
            return self();
        }
        ClusterState s = control.state();
        NodeRecord n = s.nodes().get(id);
        if (n == null) {
            throw new NoSuchElementException("no node '" + id + "'");
        }
        return node(s, n);
    }

    @GetMapping("/epochs/current")
    public EpochStatus epoch() {
        ClusterState s = control.state();
        return new EpochStatus(s.epoch(), s.system().name(), s.lastAppliedIndex());
    }

    @GetMapping("/health")
    public ClusterHealth health() {
        ClusterState s = control.state();
        boolean serving = s.system() == SystemState.READY || s.system() == SystemState.COMPUTING;
        return new ClusterHealth(serving ? "UP" : s.system() == SystemState.DEGRADED ? "DEGRADED" : "NOT_READY",
                s.system().name(), s.recoveryPhase() == null ? null : s.recoveryPhase().name(), quorum(s));
    }

    private NodeStatus.Worker node(ClusterState s, NodeRecord n) {
        String id = n.info().nodeId();
        NodeObservation o = liveness.observe(id);
        NodeHealth h = n.health();
        return new NodeStatus.Worker(id, n.info().role(), n.state().name(),
                // In the plan (a stage, or an expert group of one), a spare (standby, may take a lost stage or
                // group), or neither (failed, or draining).
                s.pipeline().contains(id) ? "stage" : s.planned().contains(id) ? "experts"
                        : s.spares().contains(id) ? "spare" : "none",
                s.draining().contains(id), n.info().host() + ":" + n.info().grpcPort(),
                n.layerStart() == null ? List.of() : IntStream.range(n.layerStart(), n.layerEnd()).boxed().toList(),
                n.layerStart() == null ? null : List.of(n.layerStart(), n.layerEnd()), n.hasEmbedding(), n.hasHead(),
                n.partition().name(), n.loadProgress(), n.currentFile(), n.partitionChecksum(),
                // Replicated (reported with READY), unlike "load", which is what this replica heard: the scheduler's budget.
                n.kvCacheBudgetBytes(), telemetry.view(id),
                o.everHeard() ? Instant.ofEpochMilli(o.lastHeartbeatMs()).toString() : null,
                Math.round(o.phi() * 1000) / 1000.0, o.connected() ? "OPEN" : o.everHeard() ? "CLOSED" : "NONE",
                instant(h.suspectedAtMs()), instant(h.failedAtMs()), instant(h.recoveredAtMs()),
                // The last heartbeat the detector had seen when it took its last verdict: failed_at minus this is
                // how long the node was silent before being declared FAILED.
                instant(h.lastHeartbeatMs()), h.cause(), h.byzantine(),
                new NodeStatus.Capabilities(n.info().cpuCores(), n.info().memoryBytes(),
                        Math.round(n.info().throughput() * 10) / 10.0, n.info().device()),
                n.failureCode() == null ? null : new NodeStatus.Error(n.failureCode(), n.failureMessage()));
    }

    private static String instant(long epochMs) {
        return epochMs <= 0 ? null : Instant.ofEpochMilli(epochMs).toString();
    }

    /** The committed ConfigChange (null before bootstrap). */
    private static SystemStatus.Config config(ClusterConfig c) {
        return c == null ? null : new SystemStatus.Config(c.clusterName(), c.quorumSize(), c.maxByzantine(),
                c.memberCount(), c.protocolVersion());
    }

    /**
     * Running tasks that generate nothing now: a stage they ran through failed (they resume when the pipeline serves
     * again), or their streaming client or their coordinator went away (a client resumes them with Last-Event-ID).
     */
    private static List<SystemStatus.PausedTask> pausedTasks(ClusterState s) {
        return s.tasks().values().stream().filter(t -> !t.state().terminal() && t.paused())
                .map(t -> new SystemStatus.PausedTask(t.taskId(), t.owner().isEmpty() ? null : t.owner(),
                        Instant.ofEpochMilli(t.pausedAtMs()).toString(), t.pauseReason(), t.generatedTokens()))
                .toList();
    }

    private static SystemStatus.Quorum quorum(ClusterState s) {
        long operational = s.nodes().values().stream().filter(n -> n.state() != WorkerState.FAILED
                && n.state() != WorkerState.SUSPECT).count();
        long suspected = s.nodes().values().stream().filter(n -> n.state() == WorkerState.SUSPECT).count();
        long failed = s.nodes().values().stream().filter(n -> n.state() == WorkerState.FAILED).count();
        // Every stage of the plan is needed (no stage replicas); before the first plan, the workers awaited.
        int required = s.pipeline().isEmpty() ? s.expectedWorkers() : s.pipeline().size();
        return new SystemStatus.Quorum(required, operational, suspected, failed);
    }
}
