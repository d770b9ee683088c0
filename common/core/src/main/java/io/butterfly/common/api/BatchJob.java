package io.butterfly.common.api;

import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * A batch job as the coordinator describes it ({@code /api/v1/jobs}, docs/jobs.md).
 *
 * @param seed the job's base seed; a JOBS client names the job by it
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record BatchJob(String id, String datasetSha256, long samples, int batchSize, long seed, int maxTokens,
                       double temperature, double topP, int topK, String definedAt, long results) {
}
