package io.butterfly.common.api;

import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * The RESULTs a coordinator received for a job ({@code GET /api/v1/jobs/{id}/results}), by step then position.
 *
 * @param coordinator the replica that answers (results are kept where they were received, docs/jobs.md)
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record JobResults(String jobId, String coordinator, List<Result> results) {

    /** @param data the client's bytes, base64 */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Result(long step, long position, int bytes, String data, String receivedAt) {
    }
}
