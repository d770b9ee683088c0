package io.butterfly.common.api;

import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/** A dataset imported for batch jobs ({@code POST /api/v1/jobs/datasets}): a job names it by its SHA-256. */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record JobDataset(String sha256, long samples, long bytes) {
}
