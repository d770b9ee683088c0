package io.butterfly.common.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * A {@code token} event of {@code POST /api/v1/inference/stream}: one token as soon as it is chosen.
 *
 * @param text     the text it settles (empty while it ends inside a character)
 * @param logprobs the step's most likely tokens; absent unless the request asked for {@code logprobs}
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record StreamedToken(String taskId, int index, long tokenId, String text, double logprob,
                            @JsonInclude(JsonInclude.Include.NON_NULL) List<Generation.TopLogprob> logprobs) {
}
