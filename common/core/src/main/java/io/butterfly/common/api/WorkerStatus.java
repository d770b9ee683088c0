package io.butterfly.common.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * A worker as its own {@code GET /api/v1/worker/state} tells it: its state, whether it joined, the epoch of its
 * assignment, what its engine computes with and the partition it holds.
 *
 * @param state       READY, FAILED, or JOINED while it has no loaded partition
 * @param joinError   why its join was refused; absent unless it was
 * @param projections what its projections compute with (e.g. "oneDNN"); null before a partition is loaded
 * @param weightBytes the loaded partition's weights in memory; 0 before one is loaded
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record WorkerStatus(String nodeId, String state, boolean joined,
                           @JsonInclude(JsonInclude.Include.NON_NULL) String joinError, long epoch, int engineThreads,
                           String projections, long weightBytes, Partition partition) {

    /**
     * The partition a worker holds or loads ({@code /api/v1/worker/partitions} lists it alone).
     *
     * @param layers        the layer range [start, end), empty before an assignment
     * @param state         the partition's load phase
     * @param progress      the fetch's progress, 0 to 1
     * @param loadedInEpoch the epoch it was loaded in: earlier than the assignment's when a re-plan left this stage as
     *                      it was (held on, not loaded again)
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Partition(String modelId, List<Integer> layers, boolean hasEmbedding, boolean hasHead, String state,
                            double progress, long bytesDone, long bytesTotal, String currentFile,
                            String partitionChecksum, long loadedInEpoch, long loadMs, double warmupMs, String error) {
    }

    /**
     * One coordinator replica a worker heartbeats to ({@code /api/v1/worker/connections}).
     *
     * @param kind             what the connection carries: "heartbeat"
     * @param lastHeartbeatAck when the replica last acknowledged a heartbeat; null if it never did
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Connection(String peer, String address, String kind, String lastHeartbeatAck) {
    }

    /**
     * What a worker has computed and holds ({@code /api/v1/worker/metrics}).
     *
     * @param replayedTokensAnswered tokens of replayed steps answered from what it sent the first time
     * @param prefixCache            what its prefix cache holds and did
     * @param hashSecondsTotal       time spent hashing steps' inputs and outputs (the phase envelope,
     *                               docs/verified-execution.md), beside {@code computeSecondsTotal}
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Metrics(long stepsExecuted, double computeSecondsTotal, double meanStepMs, int cachedSequences,
                          long kvCacheBytes, long kvCacheBudgetBytes, long replayedTokensAnswered,
                          PrefixCache prefixCache, double hashSecondsTotal) {
    }

    /**
     * A stage's automatic prefix cache (docs/serving.md#prefix-caching).
     *
     * @param enabled       whether the stage caches prefixes ({@code butterfly.worker.prefix-caching})
     * @param blockTokens   positions per block
     * @param blocks        full blocks held
     * @param bytes         memory they take (within the KV budget)
     * @param queriedTokens prompt tokens in full blocks looked up
     * @param hitTokens     of those, tokens restored instead of computed
     * @param hitRate       hit over queried tokens
     * @param evictions     blocks evicted, least recently used first
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record PrefixCache(boolean enabled, int blockTokens, int blocks, long bytes, long queriedTokens,
                              long hitTokens, double hitRate, long evictions) {
    }
}
