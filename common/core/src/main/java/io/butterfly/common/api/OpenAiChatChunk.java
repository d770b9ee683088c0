package io.butterfly.common.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import java.util.Optional;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * One chunk of a streamed {@code POST /v1/chat/completions}, in OpenAI's shape: a {@code chat.completion.chunk}. The
 * first carries the role, the next the text, the last of the message an empty delta and the finish reason; a stream
 * asked for the usage ends with a chunk of no choices and the usage.
 *
 * @param usage absent (null) unless the stream asked for the usage; then every chunk but the last says it has none
 *              ({@code "usage": null}, {@link Optional#empty()}) as OpenAI's do, and the last carries it
 */
public record OpenAiChatChunk(String id, String object, long created, String model, List<Choice> choices,
                              @JsonInclude(JsonInclude.Include.NON_NULL) Optional<OpenAiUsage> usage) {

    public static final String OBJECT = "chat.completion.chunk";

    /**
     * @param logprobs     the chunk's tokens' logprobs; null unless asked for
     * @param finishReason null until the message ends
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Choice(int index, Delta delta, OpenAiChatCompletion.Logprobs logprobs, String finishReason) {
    }

    /**
     * What the chunk adds to the message: the role (first chunk only), the text, or tool calls; none in the last.
     *
     * @param toolCalls what the chunk adds to each call (by its {@code index}): its id, type and name the first time,
     *                  then pieces of its arguments
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Delta(String role, String content, @JsonProperty("tool_calls") List<ToolCallDelta> toolCalls) {

        public Delta(String role, String content) {
            this(role, content, null);
        }
    }

    /** A piece of tool call {@code index}: the first carries its id, type and name. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record ToolCallDelta(int index, String id, String type, OpenAiChatCompletion.Function function) {
    }
}
