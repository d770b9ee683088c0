package io.butterfly.common.api;

import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * One line of {@code GET /api/v1/jobs/{id}/results} (JSONL, docs/jobs.md): a batch's RESULT as the control log keeps
 * it, with the batch's samples (their dataset lines and seeds; the generated text is the JOB_RESPONSE for the same
 * seed, step and position, the same bytes at any time).
 *
 * @param result     the client's bytes, base64
 * @param samples    the batch's samples; empty when the answering replica does not hold the dataset
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record JobResultLine(String job, long seed, long step, long position, String recordedAt, int bytes,
                            String result, List<Sample> samples) {

    /** A sample of the batch: its dataset position, its seed, and its dataset line's prompt or conversation. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Sample(long position, String seed, String prompt, List<Message> messages) {
    }

    /** A chat message of a dataset line. */
    public record Message(String role, String content, String name) {
    }
}
