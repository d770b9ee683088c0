package io.butterfly.common.api;

import java.util.Map;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * The coordinator's {@code GET /api/v1/serving}: this replica's engine now, for the dashboard's live figures.
 *
 * @param generatedTokens tokens generated since the replica started (a client takes their rate between two reads)
 * @param kvCacheUsage    each worker's KV cache held by this replica, as a share of its budget (0..1)
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record ServingStatus(int running, int waiting, long generatedTokens, Map<String, Double> kvCacheUsage,
                            long atMs) {
}
