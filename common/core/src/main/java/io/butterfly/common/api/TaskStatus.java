package io.butterfly.common.api;

import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/** A task as the coordinator's {@code /api/v1/tasks} answers it, from the replicated state. */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record TaskStatus(String taskId, String state, String owner, int promptTokens, int generatedTokens,
                         String finishReason, List<Long> tokenIds, String createdAt, String updatedAt, String error,
                         String pausedAt, String pauseReason, String idempotencyKey) {
}
