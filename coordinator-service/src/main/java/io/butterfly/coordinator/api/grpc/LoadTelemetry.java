package io.butterfly.coordinator.api.grpc;

import io.butterfly.common.api.NodeStatus;
import io.butterfly.proto.coordinator.v1.LoadPhase;
import io.butterfly.proto.coordinator.v1.LoadReport;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.stereotype.Component;

/**
 * The latest LoadProgress/LoadComplete figures per worker (docs/bootstrap-protocol.md §6.4), as they arrived: bytes,
 * ETA, current file, load time, memory used, warm-up latency. Observations, not decisions, kept as reported for the
 * state endpoints rather than in the replicated log (the phase and checksum go through the log).
 */
@Component
public class LoadTelemetry {

    private final Map<String, LoadReport> latest = new ConcurrentHashMap<>();

    /** Keeps the report unless an equal-or-newer epoch's report is already there. */
    public void record(LoadReport r) {
        latest.merge(r.getNodeId(), r, (old, now) -> now.getEpoch() >= old.getEpoch() ? now : old);
    }

    /** The node's latest load figures, as the state endpoints answer them, or null if it never reported. */
    public NodeStatus.Load view(String nodeId) {
        LoadReport r = latest.get(nodeId);
        if (r == null) {
            return null;
        }
        boolean ready = r.getPhase() == LoadPhase.READY;
        boolean failed = r.getPhase() == LoadPhase.FAILED;
        return new NodeStatus.Load(r.getEpoch(), r.getPhase().name(), Math.round(r.getProgress() * 1000) / 10.0,
                r.getBytesDone(), r.getBytesTotal(), r.getEstimatedCompletionSecs() < 0 ? null
                        : Math.round(r.getEstimatedCompletionSecs() * 10) / 10.0,
                r.getCurrentFile().isEmpty() ? null : r.getCurrentFile(), r.getWarmupStarted(),
                ready ? r.getLoadMillis() / 1000.0 : null, ready ? r.getMemoryBytes() : null,
                ready ? r.getPartitionChecksum() : null, ready ? r.getWarmupSuccess() : null,
                ready ? Math.round(r.getWarmupMillis() * 10) / 10.0 : null,
                failed ? r.getErrorCode().name() : null, failed ? r.getErrorMessage() : null);
    }
}
