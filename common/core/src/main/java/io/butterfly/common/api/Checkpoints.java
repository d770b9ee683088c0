package io.butterfly.common.api;

import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/** The coordinator's {@code GET /api/v1/checkpoints}: the checkpoints the control log recorded. */
public record Checkpoints(List<Checkpoint> checkpoints) {

    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Checkpoint(String id, long epoch, String merkleRoot, long logIndex, String createdAt,
                             long completedTasks) {
    }
}
