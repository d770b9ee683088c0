package io.butterfly.common.api;

import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/** The coordinator's {@code GET /api/v1/epochs/current}. */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record EpochStatus(long epoch, String systemState, long lastAppliedIndex) {
}
