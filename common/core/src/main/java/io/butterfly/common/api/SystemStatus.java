package io.butterfly.common.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * The coordinator's {@code GET /api/v1/system/state}: the system, its epoch and model, the checks, every node, the
 * pipeline and its spares, the recovery under way and the last one, the plans per epoch, paused tasks, and the
 * control log's Raft group (docs/api.md). The server writes it, the CLI and the tests read it.
 *
 * @param recovery      the recovery under way; null when none is
 * @param lastRecovery  the last recovery that ended; null while one is under way, or before any
 * @param config        the committed cluster configuration; null before bootstrap
 * @param modelError    why the model cannot be served (its import failed in the registry, with the registry's cause);
 *                      null while nothing says so
 * @param prefixCaches  per worker, what its stage last reported of its prefix cache
 * @param pipelines     the current plan's pipelines (docs/scale-out.md): one unless several are planned; none before
 *                      the first plan
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record SystemStatus(String systemState, long epoch, String coordinator, String modelId, String merkleRoot,
                           Feasibility feasibility, WeightValidation weightValidation, String statusMessage,
                           List<NodeStatus> nodes, Quorum quorum, List<String> pipeline, List<String> spares,
                           List<String> draining, RecoveryStatus recovery, LastRecovery lastRecovery, List<Plan> plans,
                           List<PausedTask> pausedTasks, long lastAppliedIndex, Raft raft, Config config,
                           @JsonInclude(JsonInclude.Include.NON_NULL) ModelError modelError,
                           java.util.Map<String, PrefixCache> prefixCaches, List<PipelineStatus> pipelines) {

    /**
     * One pipeline of the plan (docs/scale-out.md).
     *
     * @param stages  its stages' workers in pipeline order
     * @param serving whether it takes steps now: all its stages loaded and validated, none lost (another pipeline's
     *                lost stage does not stop it)
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record PipelineStatus(int index, List<String> stages, boolean serving) {
    }

    /**
     * What a worker's stage last reported of its prefix cache (heartbeats; docs/serving.md#prefix-caching).
     *
     * @param blocks        full blocks held, of {@code blockTokens} positions each
     * @param queriedTokens prompt tokens in full blocks looked up since its partition loaded
     * @param hitTokens     of those, found in the cache
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record PrefixCache(boolean enabled, int blocks, int blockTokens, long bytes, long queriedTokens,
                              long hitTokens, double hitRate, long evictions) {
    }

    /** The registry's cause for not serving the model, and since when this coordinator has been told it. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record ModelError(String cause, String since) {
    }

    /** The planner's verdict on whether the cluster can hold the model. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Feasibility(String planner, boolean feasible,
                              @JsonInclude(JsonInclude.Include.NON_NULL) String errorCode, long requiredBytes,
                              long availableBytes, String reason, String checkedAt) {
    }

    /** The cross-validation of the loaded weights of an epoch. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record WeightValidation(long epoch, String status, String merkleRoot, String partitionRoot,
                                   List<String> validatedNodes, List<String> failedNodes, List<String> problems,
                                   String validatedAt) {
    }

    /** Every stage of the plan is needed: how many are, and how the nodes stand. */
    public record Quorum(int required, long operational, long suspected, long failed) {
    }

    /** The recovery under way: its phase, cause, the plan being loaded and how far it is. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record RecoveryStatus(String phase, boolean recovering, String cause, List<String> lostNodes,
                                 String startedAt, long sinceFailureMs, long fromEpoch, Long planEpoch, Plan plan,
                                 String stagesReady, String reason, Integer pausedRequests) {
    }

    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record LastRecovery(String cause, List<String> lostNodes, String startedAt, String endedAt, long durationMs,
                               long fromEpoch, long toEpoch) {
    }

    /** The stages an epoch assigned, and why. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Plan(long epoch, String reason, String assignedAt, List<Stage> stages) {
    }

    /**
     * @param layerRange   {@code [start, end)}
     * @param weightFormat the served model's weights as stored (F32, BF16, Q8_0, Q4_0, Q4_K, ...: the type holding
     *                     most parameters); null before this coordinator fetched the model
     * @param weightBytes  memory the stage's weights take as its worker holds them (its shards, quantized blocks as
     *                     they are, float ones at the workers' precision); 0 before this coordinator fetched the model
     * @param expertGroups which workers hold which of the stage's routed experts when they are spread (the first is the
     *                     stage's worker; docs/sharding.md); empty: the stage's worker holds all of them
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Stage(String nodeId, List<Integer> layerRange, boolean hasEmbedding, boolean hasHead,
                        @JsonInclude(JsonInclude.Include.NON_NULL) String weightFormat,
                        @JsonInclude(JsonInclude.Include.NON_DEFAULT) long weightBytes,
                        @JsonInclude(JsonInclude.Include.NON_EMPTY) List<ExpertGroup> expertGroups) {

        public Stage {
            expertGroups = expertGroups == null ? List.of() : List.copyOf(expertGroups);
        }

        public Stage(String nodeId, List<Integer> layerRange, boolean hasEmbedding, boolean hasHead,
                     String weightFormat, long weightBytes) {
            this(nodeId, layerRange, hasEmbedding, hasHead, weightFormat, weightBytes, List.of());
        }
    }

    /** @param experts {@code [first, end)}: the routed experts {@code nodeId} holds of every sparse layer of the stage */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record ExpertGroup(String nodeId, List<Integer> experts) {
    }

    /** A running task that generates nothing now (a stage failed, or its client or coordinator went away). */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record PausedTask(String taskId, String owner, String pausedAt, String reason, int generatedTokens) {
    }

    /** The control log's Raft group as the answering replica sees it. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Raft(String leaderId, long term, String selfId, String role, long lastAppliedIndex,
                       long logStartIndex, List<String> peers) {
    }

    /** The committed cluster configuration. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Config(String clusterName, int quorumSize, int maxByzantine, int currentMemberCount,
                         String protocolVersion) {
    }
}
