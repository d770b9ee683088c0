package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.api.grpc.LoadTelemetry;
import io.butterfly.coordinator.cluster.ClusterConfig;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.EpochPlan;
import io.butterfly.coordinator.cluster.NodeHealth;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.cluster.Recovery;
import io.butterfly.coordinator.cluster.RecoveryPhase;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.Liveness;
import io.butterfly.coordinator.control.PausedRequests;
import io.butterfly.coordinator.control.RaftStatus;
import io.butterfly.coordinator.liveness.NodeObservation;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.stream.IntStream;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** State inspection endpoints (docs/state-machines.md §7.1). */
@RestController
@RequestMapping("/api/v1")
public class SystemStateController {

    private final ControlLog control;
    private final Liveness liveness;
    private final CoordinatorProperties props;
    private final LoadTelemetry telemetry;
    private final ObjectProvider<PausedRequests> paused;
    private final java.time.Clock clock;

    public SystemStateController(ControlLog control, Liveness liveness, CoordinatorProperties props,
                                 LoadTelemetry telemetry, ObjectProvider<PausedRequests> paused, java.time.Clock clock) {
        this.control = control;
        this.liveness = liveness;
        this.props = props;
        this.telemetry = telemetry;
        this.paused = paused;
        this.clock = clock;
    }

    @GetMapping("/system/state")
    public Map<String, Object> systemState() {
        ClusterState s = control.state();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("system_state", s.system().name());
        out.put("epoch", s.epoch());
        out.put("coordinator", props.nodeId());
        out.put("model_id", s.modelId());
        out.put("merkle_root", s.merkleRoot());
        out.put("feasibility", IntegrityView.feasibility(s.checks()));
        out.put("weight_validation", IntegrityView.validation(s.checks()));
        out.put("status_message", s.statusMessage());
        out.put("nodes", nodes());
        out.put("quorum", quorum(s));
        out.put("pipeline", s.pipeline());
        out.put("spares", s.spares());
        out.put("draining", s.draining());
        out.put("recovery", recovery(s));
        out.put("last_recovery", s.recovery() == null || s.recovery().ongoing() ? null : lastRecovery(s.recovery()));
        out.put("plans", s.plans().stream().map(SystemStateController::plan).toList());
        out.put("paused_tasks", pausedTasks(s));
        out.put("last_applied_index", s.lastAppliedIndex());
        out.put("raft", raft());
        out.put("config", config(s.config()));
        return out;
    }

    /**
     * The ongoing recovery (null when none): its phase, since when, the epoch that served and the plan being loaded,
     * how far that is, and how many of this replica's requests wait for it.
     */
    private Map<String, Object> recovery(ClusterState s) {
        RecoveryPhase phase = s.recoveryPhase();
        if (phase == null) {
            return null;
        }
        Recovery r = s.recovery();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("phase", phase.name());
        m.put("recovering", phase.recovering());
        m.put("cause", r.cause());
        m.put("lost_nodes", r.lostNodes());
        m.put("started_at", instant(r.startedAtMs()));
        m.put("since_failure_ms", Math.max(0, clock.millis() - r.startedAtMs()));
        m.put("from_epoch", r.fromEpoch());
        m.put("plan_epoch", s.epoch() > r.fromEpoch() ? s.epoch() : null);
        m.put("plan", s.epoch() > r.fromEpoch() ? s.plan(s.epoch()).map(SystemStateController::plan).orElse(null) : null);
        m.put("stages_ready", s.pipeline().stream().filter(id -> s.nodes().get(id).partition() == PartitionState.READY)
                .count() + "/" + s.pipeline().size());
        m.put("reason", s.statusMessage());
        PausedRequests p = paused.getIfAvailable();
        m.put("paused_requests", p == null ? null : p.pausedRequests());
        return m;
    }

    private static Map<String, Object> lastRecovery(Recovery r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cause", r.cause());
        m.put("lost_nodes", r.lostNodes());
        m.put("started_at", instant(r.startedAtMs()));
        m.put("ended_at", instant(r.endedAtMs()));
        m.put("duration_ms", r.endedAtMs() - r.startedAtMs());
        m.put("from_epoch", r.fromEpoch());
        m.put("to_epoch", r.toEpoch());
        return m;
    }

    private static Map<String, Object> plan(EpochPlan p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("epoch", p.epoch());
        m.put("reason", p.reason());
        m.put("assigned_at", instant(p.atMs()));
        m.put("stages", p.stages().stream().map(SystemStateController::stage).toList());
        return m;
    }

    private static Map<String, Object> stage(StageAssignment a) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("node_id", a.nodeId());
        m.put("layer_range", List.of(a.layerStart(), a.layerEnd()));
        m.put("has_embedding", a.hasEmbedding());
        m.put("has_head", a.hasHead());
        return m;
    }

    /** The control log's Raft group as this replica sees it (leader, term, own role, peers). */
    private Map<String, Object> raft() {
        RaftStatus r = control.raftStatus();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("leader_id", r.leaderId());
        m.put("term", r.term());
        m.put("self_id", r.selfId());
        m.put("role", r.role());
        m.put("last_applied_index", r.lastAppliedIndex());
        m.put("log_start_index", r.logStartIndex());
        m.put("peers", r.peers());
        return m;
    }

    @GetMapping("/nodes")
    public List<Map<String, Object>> nodes() {
        ClusterState s = control.state();
        List<Map<String, Object>> out = new ArrayList<>();
        out.add(self());
        s.nodes().values().forEach(n -> out.add(node(s, n)));
        return out;
    }

    /** This coordinator replica, as {@code /nodes} lists it first. */
    private Map<String, Object> self() {
        Map<String, Object> self = new LinkedHashMap<>();
        self.put("id", props.nodeId());
        self.put("role", "coordinator");
        self.put("state", control.raftStatus().role());
        return self;
    }

    /** Any node {@code /nodes} lists, this coordinator included. */
    @GetMapping("/nodes/{id}/state")
    public Map<String, Object> nodeState(@PathVariable("id") String id) {
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

    @GetMapping("/tasks")
    public List<Map<String, Object>> tasks() {
        return control.state().tasks().values().stream().map(SystemStateController::task).toList();
    }

    @GetMapping("/tasks/{id}/state")
    public Map<String, Object> taskState(@PathVariable("id") String id) {
        TaskRecord t = control.state().tasks().get(id);
        if (t == null) {
            throw new NoSuchElementException("no task '" + id + "'");
        }
        return task(t);
    }

    @GetMapping("/epochs/current")
    public Map<String, Object> epoch() {
        ClusterState s = control.state();
        return Map.of("epoch", s.epoch(), "system_state", s.system().name(), "last_applied_index", s.lastAppliedIndex());
    }

    @GetMapping("/health")
    public Map<String, Object> health() {
        ClusterState s = control.state();
        boolean serving = s.system() == SystemState.READY || s.system() == SystemState.COMPUTING;
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("status", serving ? "UP" : s.system() == SystemState.DEGRADED ? "DEGRADED" : "NOT_READY");
        out.put("system_state", s.system().name());
        out.put("recovery_phase", s.recoveryPhase() == null ? null : s.recoveryPhase().name());
        out.put("quorum", quorum(s));
        return out;
    }

    private Map<String, Object> node(ClusterState s, NodeRecord n) {
        String id = n.info().nodeId();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", id);
        m.put("role", n.info().role());
        m.put("state", n.state().name());
        // In the plan (a stage), a spare (standby, may take a lost stage), or neither (failed, or draining).
        m.put("standing", s.pipeline().contains(id) ? "stage" : s.spares().contains(id) ? "spare" : "none");
        m.put("draining", s.draining().contains(id));
        m.put("address", n.info().host() + ":" + n.info().grpcPort());
        m.put("layers", n.layerStart() == null ? List.of()
                : IntStream.range(n.layerStart(), n.layerEnd()).boxed().toList());
        m.put("layer_range", n.layerStart() == null ? null : List.of(n.layerStart(), n.layerEnd()));
        m.put("has_embedding", n.hasEmbedding());
        m.put("has_head", n.hasHead());
        m.put("partition_state", n.partition().name());
        m.put("progress", n.loadProgress());
        m.put("current_file", n.currentFile());
        m.put("partition_checksum", n.partitionChecksum());
        // Replicated (reported with READY), unlike "load", which is what this replica heard: the scheduler's budget.
        m.put("kv_cache_budget_bytes", n.kvCacheBudgetBytes());
        m.put("load", telemetry.view(n.info().nodeId()));
        NodeObservation o = liveness.observe(n.info().nodeId());
        m.put("last_heartbeat", o.everHeard() ? Instant.ofEpochMilli(o.lastHeartbeatMs()).toString() : null);
        m.put("phi", Math.round(o.phi() * 1000) / 1000.0);
        m.put("heartbeat_stream", o.connected() ? "OPEN" : o.everHeard() ? "CLOSED" : "NONE");
        NodeHealth h = n.health();
        m.put("suspected_at", instant(h.suspectedAtMs()));
        m.put("failed_at", instant(h.failedAtMs()));
        m.put("recovered_at", instant(h.recoveredAtMs()));
        // The last heartbeat the detector had seen when it took its last verdict: failed_at minus this is
        // how long the node was silent before being declared FAILED.
        m.put("last_heartbeat_at_verdict", instant(h.lastHeartbeatMs()));
        m.put("failure_cause", h.cause());
        m.put("capabilities", Map.of("cpu_cores", n.info().cpuCores(), "memory_bytes", n.info().memoryBytes(),
                "measured_gflops", Math.round(n.info().throughput() * 10) / 10.0, "device", n.info().device()));
        if (n.failureCode() != null) {
            m.put("error", Map.of("code", n.failureCode(), "message", n.failureMessage()));
        }
        return m;
    }

    private static String instant(long epochMs) {
        return epochMs <= 0 ? null : Instant.ofEpochMilli(epochMs).toString();
    }

    /** The committed ConfigChange (null before bootstrap). */
    private static Map<String, Object> config(ClusterConfig c) {
        if (c == null) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("cluster_name", c.clusterName());
        m.put("quorum_size", c.quorumSize());
        m.put("max_byzantine", c.maxByzantine());
        m.put("current_member_count", c.memberCount());
        m.put("protocol_version", c.protocolVersion());
        return m;
    }

    private static Map<String, Object> task(TaskRecord t) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("task_id", t.taskId());
        m.put("state", t.state().name());
        m.put("owner", t.owner().isEmpty() ? null : t.owner());
        m.put("prompt_tokens", t.promptTokens());
        m.put("generated_tokens", t.generatedTokens());
        m.put("finish_reason", t.finishReason());
        m.put("token_ids", t.tokenIds());
        m.put("created_at", Instant.ofEpochMilli(t.createdAtMs()).toString());
        m.put("updated_at", Instant.ofEpochMilli(t.updatedAtMs()).toString());
        m.put("error", t.error());
        m.put("paused_at", t.paused() ? Instant.ofEpochMilli(t.pausedAtMs()).toString() : null);
        m.put("pause_reason", t.pauseReason());
        m.put("idempotency_key", t.request() == null ? null : t.request().idempotencyKey());
        return m;
    }

    /**
     * Running tasks that generate nothing now: a stage they ran through failed (they resume when the pipeline serves
     * again), or their streaming client or their coordinator went away (a client resumes them with Last-Event-ID).
     */
    private static List<Map<String, Object>> pausedTasks(ClusterState s) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (TaskRecord t : s.tasks().values()) {
            if (!t.state().terminal() && t.paused()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("task_id", t.taskId());
                m.put("owner", t.owner().isEmpty() ? null : t.owner());
                m.put("paused_at", Instant.ofEpochMilli(t.pausedAtMs()).toString());
                m.put("reason", t.pauseReason());
                m.put("generated_tokens", t.generatedTokens());
                out.add(m);
            }
        }
        return out;
    }

    private static Map<String, Object> quorum(ClusterState s) {
        long operational = s.nodes().values().stream().filter(n -> n.state() != WorkerState.FAILED
                && n.state() != WorkerState.SUSPECT).count();
        long suspected = s.nodes().values().stream().filter(n -> n.state() == WorkerState.SUSPECT).count();
        long failed = s.nodes().values().stream().filter(n -> n.state() == WorkerState.FAILED).count();
        // Every stage of the plan is needed (no stage replicas); before the first plan, the workers awaited.
        int required = s.pipeline().isEmpty() ? s.expectedWorkers() : s.pipeline().size();
        return Map.of("required", required, "operational", operational, "suspected", suspected, "failed", failed);
    }
}
