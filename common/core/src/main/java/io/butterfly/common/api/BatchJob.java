package io.butterfly.common.api;

import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * A batch job as the coordinator describes it ({@code /api/v1/jobs}, docs/jobs.md).
 *
 * @param seed           the job's base seed; a JOBS client names the job by it
 * @param maxResultBytes the results the control log keeps for the job, at most
 * @param progress       how far it is, from the replicated state
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record BatchJob(String id, String datasetSha256, long samples, int batchSize, long seed, int maxTokens,
                       double temperature, double topP, int topK, String definedAt, long maxResultBytes,
                       Progress progress) {

    /**
     * Dataset positions of the steps begun (step 0 alone before any batch is handed out): with a result (done), handed
     * out under a live lease (leased), or neither (pending); results committed and per second over the last minute.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Progress(long steps, long done, long leased, long pending, long results, long resultBytes,
                           double resultsPerSecond) {
    }
}
