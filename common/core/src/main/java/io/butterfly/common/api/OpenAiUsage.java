package io.butterfly.common.api;

import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/** OpenAI's {@code usage} object of a completion or a chat completion: tokens in, out and both. */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record OpenAiUsage(int promptTokens, int completionTokens, int totalTokens) {

    public static OpenAiUsage of(int promptTokens, int completionTokens) {
        return new OpenAiUsage(promptTokens, completionTokens, promptTokens + completionTokens);
    }
}
