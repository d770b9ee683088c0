package io.butterfly.worker.api.rest;

import io.butterfly.common.api.WorkerStatus;
import io.butterfly.worker.capability.CapabilityProbe;
import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.engine.PrefixCacheStats;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.DiscoveryGateway;
import io.butterfly.worker.partition.PartitionManager;
import io.butterfly.worker.partition.PartitionStatus;
import io.butterfly.worker.pipeline.PipelineStage;
import java.util.ArrayList;
import java.util.List;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/** Worker inspection endpoints (docs/state-machines.md §7.1); the answers are records of common/core's {@code api}. */
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
    public WorkerStatus state() {
        PartitionStatus s = partitions.status();
        PartitionExecutor executor = partitions.loadedExecutor();
        return new WorkerStatus(partitions.settings().nodeId(), workerState(s), membership.joined(),
                membership.joinError(), s.epoch(), capabilities.engineThreads(),
                executor == null ? null : executor.projections(), executor == null ? 0 : executor.weightBytes(),
                partition(s));
    }

    @GetMapping("/partitions")
    public List<WorkerStatus.Partition> partitions() {
        PartitionStatus s = partitions.status();
        return s.modelId() == null ? List.of() : List.of(partition(s));
    }

    /** One connection per coordinator replica this worker heartbeats to. */
    @GetMapping("/connections")
    public List<WorkerStatus.Connection> connections() {
        List<WorkerStatus.Connection> out = new ArrayList<>();
        coordinator.heartbeatAcks().forEach((peer, lastAck) -> {
            int at = peer.indexOf('@');
            out.add(new WorkerStatus.Connection(peer.substring(0, at), peer.substring(at + 1), "heartbeat",
                    lastAck == null ? null : lastAck.toString()));
        });
        return out;
    }

    @GetMapping("/metrics")
    public WorkerStatus.Metrics metrics() {
        long steps = stage.stepsExecuted();
        PartitionExecutor executor = partitions.loadedExecutor();
        return new WorkerStatus.Metrics(steps, stage.computeNanosTotal() / 1e9,
                steps == 0 ? 0.0 : stage.computeNanosTotal() / 1e6 / steps,
                executor == null ? 0 : executor.cachedSequences(), executor == null ? 0 : executor.cachedBytes(),
                partitions.settings().executor().kvCacheBytes(), executor == null ? 0 : executor.answeredTokens(),
                prefixCache(executor == null ? PrefixCacheStats.OFF : executor.prefixCacheStats()),
                stage.hashNanosTotal() / 1e9);
    }

    static WorkerStatus.PrefixCache prefixCache(PrefixCacheStats s) {
        return new WorkerStatus.PrefixCache(s.enabled(), PrefixCacheStats.blockTokens(), s.blocks(), s.bytes(),
                s.queriedTokens(), s.hitTokens(), s.hitRate(), s.evictions());
    }

    private static String workerState(PartitionStatus s) {
        return switch (s.phase()) {
            case READY -> "READY";
            case FAILED -> "FAILED";
            default -> "JOINED";
        };
    }

    private static WorkerStatus.Partition partition(PartitionStatus s) {
        return new WorkerStatus.Partition(s.modelId(),
                s.modelId() == null ? List.of() : List.of(s.layerStart(), s.layerEnd()), s.hasEmbedding(),
                s.hasHead(), s.phase().name(), s.progress(), s.bytesDone(), s.bytesTotal(), s.currentFile(),
                s.partitionChecksum(), s.loadedInEpoch(), s.loadMillis(), s.warmupMillis(), s.error());
    }
}
