package io.butterfly.coordinator.api.grpc;

import io.butterfly.proto.coordinator.v1.LoadPhase;
import io.butterfly.proto.coordinator.v1.LoadReport;
import java.util.LinkedHashMap;
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

    /** The node's latest load figures as JSON-ready values, or null if it never reported. */
    public Map<String, Object> view(String nodeId) {
        LoadReport r = latest.get(nodeId);
        if (r == null) {
            return null;
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("epoch", r.getEpoch());
        m.put("phase", r.getPhase().name());
        m.put("progress_percent", Math.round(r.getProgress() * 1000) / 10.0);
        m.put("bytes_loaded", r.getBytesDone());
        m.put("total_bytes", r.getBytesTotal());
        m.put("estimated_completion_secs", r.getEstimatedCompletionSecs() < 0 ? null
                : Math.round(r.getEstimatedCompletionSecs() * 10) / 10.0);
        m.put("current_file", r.getCurrentFile().isEmpty() ? null : r.getCurrentFile());
        m.put("warmup_started", r.getWarmupStarted());
        if (r.getPhase() == LoadPhase.READY) {
            m.put("total_load_time_secs", r.getLoadMillis() / 1000.0);
            m.put("memory_used_bytes", r.getMemoryBytes());
            m.put("partition_checksum", r.getPartitionChecksum());
            m.put("warmup_success", r.getWarmupSuccess());
            m.put("warmup_latency_ms", Math.round(r.getWarmupMillis() * 10) / 10.0);
        }
        if (r.getPhase() == LoadPhase.FAILED) {
            m.put("error_code", r.getErrorCode().name());
            m.put("error_message", r.getErrorMessage());
        }
        return m;
    }
}
