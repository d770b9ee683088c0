package io.butterfly.common.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * The coordinator's {@code POST /v1/completions} in OpenAI's shape: a {@code text_completion} object, whole or one
 * chunk of a stream. A chunk has no {@code usage}; the last chunk of a stream asked for it has no choices and the usage.
 *
 * @param created seconds since the epoch
 */
public record OpenAiCompletion(String id, String object, long created, String model, List<Choice> choices,
                               @JsonInclude(JsonInclude.Include.NON_NULL) OpenAiUsage usage) {

    public static final String OBJECT = "text_completion";

    /**
     * One prompt's completion, or a chunk of it.
     *
     * @param logprobs     null unless asked for, as OpenAI writes it
     * @param finishReason null until the last chunk
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Choice(int index, String text, Logprobs logprobs, String finishReason) {
    }

    /**
     * Per token: its text, its log-probability, the step's most likely tokens (text to log-probability: OpenAI's
     * dictionary, the chosen token always among them) and where its text starts in the completion.
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Logprobs(List<String> tokens, List<Double> tokenLogprobs, List<Map<String, Double>> topLogprobs,
                           List<Integer> textOffset) {
    }
}
