package io.butterfly.worker.api.rest;

import io.butterfly.worker.capability.CapabilityProbe;
import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.DiscoveryGateway;
import io.butterfly.worker.partition.PartitionManager;
import io.butterfly.worker.partition.PartitionStatus;
import io.butterfly.worker.pipeline.PipelineStage;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** Worker inspection endpoints (docs/state-machines.md §7.1). */
@RestController
@RequestMapping("/api/v1/worker")
public class WorkerStateController {

    private final PartitionManager partitions;
    private final DiscoveryGateway membership;
    private final CoordinatorGateway coordinator;
    private final PipelineStage stage;
    private final CapabilityProbe capabilities;

    public WorkerStateController(PartitionManager partitions, DiscoveryGateway membership, CoordinatorGateway coordinator,
                                 PipelineStage stage, CapabilityProbe capabilities) {
        this.partitions = partitions;
        this.membership = membership;
        this.coordinator = coordinator;
        this.stage = stage;
        this.capabilities = capabilities;
    }

    @GetMapping("/state")
    public Map<String, Object> state() {
        PartitionStatus s = partitions.status();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("node_id", partitions.settings().nodeId());
        out.put("state", workerState(s));
        out.put("joined", membership.joined());
        if (membership.joinError() != null) {
            out.put("join_error", membership.joinError());
        }
        out.put("epoch", s.epoch());
        out.put("engine_threads", capabilities.engineThreads());
        PartitionExecutor executor = partitions.loadedExecutor();
        out.put("projections", executor == null ? null : executor.projections());
        out.put("weight_bytes", executor == null ? 0 : executor.weightBytes());
        out.put("partition", partition(s));
        return out;
    }

    @GetMapping("/partitions")
    public List<Map<String, Object>> partitions() {
        PartitionStatus s = partitions.status();
        return s.modelId() == null ? List.of() : List.of(partition(s));
    }

    /** One connection per coordinator replica this worker heartbeats to. */
    @GetMapping("/connections")
    public List<Map<String, Object>> connections() {
        List<Map<String, Object>> out = new java.util.ArrayList<>();
        coordinator.heartbeatAcks().forEach((peer, lastAck) -> {
            Map<String, Object> c = new LinkedHashMap<>();
            int at = peer.indexOf('@');
            c.put("peer", peer.substring(0, at));
            c.put("address", peer.substring(at + 1));
            c.put("kind", "heartbeat");
            c.put("last_heartbeat_ack", lastAck == null ? null : lastAck.toString());
            out.add(c);
        });
        return out;
    }

    @GetMapping("/metrics")
    public Map<String, Object> metrics() {
        long steps = stage.stepsExecuted();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("steps_executed", steps);
        out.put("compute_seconds_total", stage.computeNanosTotal() / 1e9);
        out.put("mean_step_ms", steps == 0 ? 0.0 : stage.computeNanosTotal() / 1e6 / steps);
        PartitionExecutor executor = partitions.loadedExecutor();
        out.put("cached_sequences", executor == null ? 0 : executor.cachedSequences());
        out.put("kv_cache_bytes", executor == null ? 0 : executor.cachedBytes());
        out.put("kv_cache_budget_bytes", partitions.settings().executor().kvCacheBytes());
        out.put("replayed_tokens_answered", executor == null ? 0 : executor.answeredTokens());
        return out;
    }

    private static String workerState(PartitionStatus s) {
        return switch (s.phase()) {
            case READY -> "READY";
            case FAILED -> "FAILED";
            default -> "JOINED";
        };
    }

    private static Map<String, Object> partition(PartitionStatus s) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("model_id", s.modelId());
        p.put("layers", s.modelId() == null ? List.of() : List.of(s.layerStart(), s.layerEnd()));
        p.put("has_embedding", s.hasEmbedding());
        p.put("has_head", s.hasHead());
        p.put("state", s.phase().name());
        p.put("progress", s.progress());
        p.put("bytes_done", s.bytesDone());
        p.put("bytes_total", s.bytesTotal());
        p.put("current_file", s.currentFile());
        p.put("partition_checksum", s.partitionChecksum());
        // Earlier than the epoch when a re-plan left this stage as it was: held on, not loaded again.
        p.put("loaded_in_epoch", s.loadedInEpoch());
        p.put("load_ms", s.loadMillis());
        p.put("warmup_ms", s.warmupMillis());
        p.put("error", s.error());
        return p;
    }
}
