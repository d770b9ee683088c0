package io.butterfly.common.api;

import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * The coordinator's {@code GET /api/v1/health}.
 *
 * @param status "UP" while serving, "DEGRADED", or "NOT_READY"
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record ClusterHealth(String status, String systemState, String recoveryPhase, SystemStatus.Quorum quorum) {
}
