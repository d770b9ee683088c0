package io.butterfly.common.api;

import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/** The coordinator's 202 to {@code POST /api/v1/nodes/{id}/drain}: the drain is recorded, and what happens next. */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record DrainAccepted(String nodeId, boolean draining, boolean holdsStage, long epoch, String systemState,
                            String message) {
}
