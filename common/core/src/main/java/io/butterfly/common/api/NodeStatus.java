package io.butterfly.common.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonSubTypes;
import com.fasterxml.jackson.annotation.JsonTypeInfo;
import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * A node as the coordinator's {@code /api/v1/nodes} lists it: the answering coordinator first, then every worker. Its
 * {@code role} tells which it is.
 */
@JsonTypeInfo(use = JsonTypeInfo.Id.NAME, include = JsonTypeInfo.As.EXISTING_PROPERTY, property = "role",
        visible = true, defaultImpl = NodeStatus.Worker.class)
@JsonSubTypes({@JsonSubTypes.Type(value = NodeStatus.Coordinator.class, name = "coordinator"),
        @JsonSubTypes.Type(value = NodeStatus.Worker.class, name = "worker")})
public sealed interface NodeStatus {

    String id();

    String role();

    String state();

    /** The answering coordinator replica; {@code state} is its Raft role. */
    record Coordinator(String id, String role, String state) implements NodeStatus {
    }

    /**
     * A worker: its state, its stage or standing, its partition and load, and what the failure detector says of it.
     *
     * @param standing "stage" (in the plan), "spare" (may take a lost stage) or "none"
     * @param layers   every layer it holds
     * @param load     its load figures as this replica last heard them; null if it never reported
     * @param error    why its load failed; absent unless it did
     * @param byzantine an audit found it computing wrong: FAILED, planned away, {@code failure_cause} says how
     *                  (docs/verified-execution.md#audits)
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Worker(String id, String role, String state, String standing, boolean draining, String address,
                  List<Integer> layers, List<Integer> layerRange, boolean hasEmbedding, boolean hasHead,
                  String partitionState, double progress, String currentFile, String partitionChecksum,
                  long kvCacheBudgetBytes, Load load, String lastHeartbeat, double phi, String heartbeatStream,
                  String suspectedAt, String failedAt, String recoveredAt, String lastHeartbeatAtVerdict,
                  String failureCause, boolean byzantine, Capabilities capabilities,
                  @JsonInclude(JsonInclude.Include.NON_NULL) Error error) implements NodeStatus {
    }

    /**
     * A worker's load figures. The figures of a READY load, and the error of a FAILED one, are absent otherwise.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Load(long epoch, String phase, double progressPercent, long bytesLoaded, long totalBytes,
                Double estimatedCompletionSecs, String currentFile, boolean warmupStarted,
                @JsonInclude(JsonInclude.Include.NON_NULL) Double totalLoadTimeSecs,
                @JsonInclude(JsonInclude.Include.NON_NULL) Long memoryUsedBytes,
                @JsonInclude(JsonInclude.Include.NON_NULL) String partitionChecksum,
                @JsonInclude(JsonInclude.Include.NON_NULL) Boolean warmupSuccess,
                @JsonInclude(JsonInclude.Include.NON_NULL) Double warmupLatencyMs,
                @JsonInclude(JsonInclude.Include.NON_NULL) String errorCode,
                @JsonInclude(JsonInclude.Include.NON_NULL) String errorMessage) {
    }

    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Capabilities(int cpuCores, long memoryBytes, double measuredGflops, String device) {
    }

    record Error(String code, String message) {
    }
}
