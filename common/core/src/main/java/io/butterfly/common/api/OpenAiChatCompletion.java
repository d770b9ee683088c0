package io.butterfly.common.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.util.List;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * The coordinator's {@code POST /v1/chat/completions} answered whole, in OpenAI's shape: a {@code chat.completion}
 * object (a stream's chunks are {@link OpenAiChatChunk}s).
 *
 * @param created seconds since the epoch
 */
public record OpenAiChatCompletion(String id, String object, long created, String model, List<Choice> choices,
                                   OpenAiUsage usage) {

    public static final String OBJECT = "chat.completion";

    /** @param logprobs null unless asked for, as OpenAI writes it */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Choice(int index, Message message, Logprobs logprobs, String finishReason) {
    }

    /**
     * The assistant's message; {@code refusal} is always null (Butterfly refuses with an error, not a message).
     *
     * @param content   null when the message only calls tools
     * @param toolCalls the functions the model calls; absent when it calls none
     */
    public record Message(String role, String content, String refusal,
                          @JsonInclude(JsonInclude.Include.NON_NULL) @JsonProperty("tool_calls") List<ToolCall> toolCalls) {

        public Message(String role, String content, String refusal) {
            this(role, content, refusal, null);
        }
    }

    /** A call of a function: its id (quoted back by the tool's answer), its name and its arguments as JSON text. */
    public record ToolCall(String id, String type, Function function) {

        public static final String FUNCTION = "function";
    }

    /** The function called; in a stream's chunks a field is absent when that chunk adds nothing to it. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Function(String name, String arguments) {
    }

    /** The tokens' logprobs in order; {@code refusal} is always null. */
    public record Logprobs(List<Token> content, String refusal) {
    }

    /**
     * A token: its text, log-probability and UTF-8 bytes, and for a chosen token the step's most likely tokens, most
     * likely first (an alternative has none of its own: the field is absent).
     *
     * @param bytes null where the token ends inside a character (its text is then U+FFFD)
     */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Token(String token, double logprob, List<Integer> bytes,
                        @JsonInclude(JsonInclude.Include.NON_NULL) List<Token> topLogprobs) {
    }
}
