package io.butterfly.common.api;

import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * A task's transcript as the coordinator's {@code /api/v1/tasks/{id}/transcript} answers it
 * (docs/verified-execution.md). Hashes are XXH64, 16 lowercase hex digits.
 *
 * @param replica the coordinator replica that ran the task and answers its transcript
 * @param genesis the chain's start: the hash of the prompt's token ids
 * @param digest  the chain's last link: two runs computed the same generation when their digests are equal
 * @param links   one per sampled token, in order
 * @param steps   the steps that ran for the task (its newest 4096), with what each stage computed
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record TaskTranscript(String taskId, String replica, String genesis, String digest, List<Link> links,
                             List<Step> steps) {

    /**
     * @param end        the positions the logits were conditioned on (prompt and tokens before)
     * @param logitsHash the last stage's hash of the logits row
     * @param link       XXH64 of the previous link, end, logits hash and token id
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Link(int end, String logitsHash, long tokenId, String link) {
    }

    /**
     * @param batch     the coordinator's micro-batch number
     * @param inputHash the hash of the step's token ids for the task
     * @param stages    in pipeline order
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Step(long batch, int position, int tokens, String inputHash, List<Stage> stages) {
    }

    /**
     * @param contract   the precision contract it computed under (weights/compute/activations)
     * @param outputHash its output rows' hash for the task (the logits row on the last stage; zeros: no row)
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Stage(String nodeId, String contract, String outputHash) {
    }
}
