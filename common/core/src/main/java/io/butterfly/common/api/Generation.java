package io.butterfly.common.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * The coordinator's answer to {@code POST /api/v1/inference} (and the {@code done} event of its stream): the tokens,
 * text, log-probabilities, usage and timings of one generation (docs/api.md).
 *
 * @param logprobs per step, the most likely tokens; absent unless the request asked for {@code logprobs}
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record Generation(String taskId, String modelId, List<Long> promptTokenIds, List<Long> tokenIds, String text,
                         String finishReason, List<Double> tokenLogprobs,
                         @JsonInclude(JsonInclude.Include.NON_NULL) List<List<TopLogprob>> logprobs, Usage usage,
                         Timings timings) {

    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record TopLogprob(int tokenId, double logprob) {
    }

    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Usage(int promptTokens, int completionTokens, int totalTokens) {
    }

    /** Milliseconds, rounded to the microsecond. */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Timings(double timeToFirstTokenMs, double decodeTokensPerSecond, double totalMs,
                          Map<String, Double> stageComputeMs, double transportMs, double pipelineMs,
                          double samplingMs) {
    }
}
