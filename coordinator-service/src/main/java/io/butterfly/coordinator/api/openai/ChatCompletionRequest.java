package io.butterfly.coordinator.api.openai;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.ResponseFormat;
import io.butterfly.coordinator.inference.sampling.ChoiceSeeds;
import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.inference.RequestValidator;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.tools.Tools;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import tools.jackson.databind.JsonNode;

/**
 * The body of OpenAI's {@code POST /v1/chat/completions}, as its clients send it. Options Butterfly does not implement
 * (the deprecated functions, images, audio, penalties, ...) are accepted at their neutral value and
 * refused otherwise, naming the field, rather than silently ignored; a field OpenAI does not have is refused as
 * unknown. Defaults are OpenAI's: {@code temperature} 1, a fresh seed per request unless one is given, and a reply as
 * long as fits.
 *
 * @param messages            the conversation: each {@code role}, {@code content} (a string or a list of text parts)
 *                            and an optional {@code name}; an assistant's {@code tool_calls}, a tool's answer with
 *                            the {@code tool_call_id} it answers
 * @param maxTokens           the older name of {@code max_completion_tokens}; both may be given if they agree
 * @param logprobs            true: each token's log-probability, with {@code top_logprobs} (0 to 20) alternatives
 * @param ignoreEos           vLLM's extension, as in {@code POST /v1/completions}
 */
public record ChatCompletionRequest(JsonNode messages,
                                    String model,
                                    @JsonProperty("max_tokens") Integer maxTokens,
                                    @JsonProperty("max_completion_tokens") Integer maxCompletionTokens,
                                    Double temperature,
                                    @JsonProperty("top_p") Double topP,
                                    Long seed,
                                    @JsonFormat(with = JsonFormat.Feature.ACCEPT_SINGLE_VALUE_AS_ARRAY) List<String> stop,
                                    Boolean logprobs,
                                    @JsonProperty("top_logprobs") Integer topLogprobs,
                                    Boolean stream,
                                    @JsonProperty("stream_options") CompletionRequest.StreamOptions streamOptions,
                                    Integer n,
                                    @JsonProperty("response_format") JsonNode responseFormat,
                                    @JsonProperty("presence_penalty") Double presencePenalty,
                                    @JsonProperty("frequency_penalty") Double frequencyPenalty,
                                    @JsonProperty("logit_bias") Map<String, Double> logitBias,
                                    String user,
                                    JsonNode tools,
                                    @JsonProperty("tool_choice") JsonNode toolChoice,
                                    @JsonProperty("parallel_tool_calls") Boolean parallelToolCalls,
                                    JsonNode functions,
                                    @JsonProperty("function_call") JsonNode functionCall,
                                    JsonNode audio,
                                    JsonNode modalities,
                                    JsonNode prediction,
                                    @JsonProperty("reasoning_effort") String reasoningEffort,
                                    @JsonProperty("web_search_options") JsonNode webSearchOptions,
                                    Boolean store,
                                    Map<String, String> metadata,
                                    @JsonProperty("service_tier") String serviceTier,
                                    @JsonProperty("top_k") Integer topK,
                                    @JsonProperty("ignore_eos") Boolean ignoreEos) {

    /** OpenAI's default sampling temperature. */
    static final double DEFAULT_TEMPERATURE = 1.0;
    /** Keys of a message: OpenAI's for system, user and assistant messages. */
    private static final Set<String> MESSAGE_KEYS = Set.of("role", "content", "name", "tool_calls", "function_call",
            "refusal", "audio", "tool_call_id");

    /** Choices asked for ({@code n}). */
    int choices() {
        return n == null ? 1 : n;
    }

    /** {@code r} with another seed (choice i of n). */
    static GenerationRequest withSeed(GenerationRequest r, long seed) {
        return new GenerationRequest(r.prompt(), r.tokenIds(), r.maxTokens(), r.temperature(), r.topP(), r.topK(), seed,
                r.logprobs(), r.ignoreEos(), r.stop(), r.responseFormat());
    }

    boolean streaming() {
        return Boolean.TRUE.equals(stream);
    }

    boolean includeUsage() {
        return streamOptions != null && Boolean.TRUE.equals(streamOptions.includeUsage());
    }

    boolean withLogprobs() {
        return Boolean.TRUE.equals(logprobs);
    }

    /** The field a limit on the reply's length came in (for the inference's refusals of it), or null. */
    String maxTokensField() {
        return maxCompletionTokens != null ? "max_completion_tokens" : maxTokens != null ? "max_tokens" : null;
    }

    /**
     * The conversation, as the chat template sees it; refuses first what cannot be served as asked, and a conversation
     * of more than {@code maxMessages} messages (413).
     */
    List<ChatTemplate.Message> conversation(int maxMessages) {
        refuseUnsupported();
        if (messages == null || messages.isNull()) {
            throw new InvalidRequestException("messages", "messages is required");
        }
        if (!messages.isArray()) {
            throw new InvalidRequestException("messages", "messages must be a list of messages");
        }
        if (messages.size() > maxMessages) {
            throw new InvalidRequestException("messages", "messages holds " + messages.size() + " messages, more than the"
                    + " limit of " + maxMessages + " (butterfly.coordinator.max-chat-messages)", true);
        }
        List<ChatTemplate.Message> out = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            out.add(message(messages.get(i), "messages[" + i + "]"));
        }
        return out;
    }

    /**
     * The generation that answers: {@code promptTokenIds} are the rendered conversation's, {@code defaultMaxTokens} the
     * reply's length when the request sets none, {@code freshSeed} the seed when it gives none.
     */
    GenerationRequest generation(long[] promptTokenIds, int defaultMaxTokens, long freshSeed, Tools tools) {
        List<Long> ids = new ArrayList<>(promptTokenIds.length);
        for (long id : promptTokenIds) {
            ids.add(id);
        }
        Integer limit = maxCompletionTokens != null ? maxCompletionTokens : maxTokens;
        return new GenerationRequest(null, ids, limit == null ? defaultMaxTokens : limit,
                temperature == null ? DEFAULT_TEMPERATURE : temperature, topP, topK == null || topK == -1 ? null : topK,
                seed == null ? freshSeed : seed, withLogprobs() ? (topLogprobs == null ? 0 : topLogprobs) : null,
                ignoreEos, stop, tools.choice().constrained() ? tools.constraint()
                        : ResponseFormat.parse(responseFormat, "response_format"));
    }

    private static ChatTemplate.Message message(JsonNode m, String field) {
        if (m == null || !m.isObject()) {
            throw new InvalidRequestException(field, "a message must be an object with a role and content");
        }
        for (String key : m.propertyNames()) {
            if (!MESSAGE_KEYS.contains(key)) {
                throw new InvalidRequestException(field + "." + key, "unknown field " + key + " in a message");
            }
        }
        JsonNode role = m.get("role");
        if (role == null || !role.isString()) {
            throw new InvalidRequestException(field + ".role", "role must be a string: system, user, assistant or tool");
        }
        String r = role.stringValue();
        refuseNonEmpty(m, field, "function_call", "function calls are not supported: use tool_calls");
        refuseNonEmpty(m, field, "audio", "audio is not supported");
        refuseNonEmpty(m, field, "refusal", "a refusal message is not supported: give the text as content");
        if (!r.equals("assistant")) {
            refuseNonEmpty(m, field, "tool_calls", "only an assistant's message makes tool calls");
        }
        JsonNode name = m.get("name");
        if (name != null && !name.isNull() && !name.isString()) {
            throw new InvalidRequestException(field + ".name", "name must be a string");
        }
        String toolCallId = null;
        if (r.equals("tool")) {
            JsonNode id = m.get("tool_call_id");
            if (id == null || !id.isString()) {
                throw new InvalidRequestException(field + ".tool_call_id", "a tool's message gives the tool_call_id of "
                        + "the call it answers");
            }
            toolCallId = id.stringValue();
        } else {
            refuseNonEmpty(m, field, "tool_call_id", "only a tool's message answers a tool call");
        }
        List<ChatTemplate.ToolCall> calls = r.equals("assistant") ? toolCalls(m.get("tool_calls"),
                field + ".tool_calls") : null;
        JsonNode c = m.get("content");
        String content = calls != null && (c == null || c.isNull()) ? null : content(c, field + ".content");
        return new ChatTemplate.Message(r, content, name == null || name.isNull() ? null : name.stringValue(), calls,
                toolCallId);
    }

    /** An assistant's {@code tool_calls}: {@code [{"id", "type": "function", "function": {"name", "arguments"}}]}. */
    private static List<ChatTemplate.ToolCall> toolCalls(JsonNode calls, String field) {
        if (calls == null || calls.isNull() || calls.isArray() && calls.isEmpty()) {
            return null;
        }
        if (!calls.isArray()) {
            throw new InvalidRequestException(field, "tool_calls must be a list of calls");
        }
        List<ChatTemplate.ToolCall> out = new ArrayList<>(calls.size());
        for (int i = 0; i < calls.size(); i++) {
            JsonNode call = calls.get(i);
            String at = field + "[" + i + "]";
            if (call == null || !call.isObject()) {
                throw new InvalidRequestException(at, "a tool call must be an object {\"id\", \"type\": \"function\", "
                        + "\"function\": {\"name\", \"arguments\"}}");
            }
            for (String key : call.propertyNames()) {
                if (!Set.of("id", "type", "function").contains(key)) {
                    throw new InvalidRequestException(at + "." + key, "unknown field " + key + " in a tool call");
                }
            }
            if (!call.path("id").isString()) {
                throw new InvalidRequestException(at + ".id", "a tool call's id must be a string");
            }
            if (!"function".equals(call.path("type").asString(null))) {
                throw new InvalidRequestException(at + ".type", "type must be function");
            }
            JsonNode f = call.get("function");
            if (f == null || !f.isObject() || !f.path("name").isString()) {
                throw new InvalidRequestException(at + ".function.name", "a tool call names its function");
            }
            JsonNode args = f.get("arguments");
            if (args == null || !args.isString()) {
                throw new InvalidRequestException(at + ".function.arguments", "arguments must be a string of JSON");
            }
            out.add(new ChatTemplate.ToolCall(call.get("id").stringValue(), f.get("name").stringValue(),
                    args.stringValue()));
        }
        return out;
    }

    /** A string, or a list of text parts joined by newlines (as vLLM gives them to a template that reads strings). */
    private static String content(JsonNode c, String field) {
        if (c == null || c.isNull()) {
            throw new InvalidRequestException(field, "content is required: a string or a list of text parts");
        }
        if (c.isString()) {
            return c.stringValue();
        }
        if (!c.isArray()) {
            throw new InvalidRequestException(field, "content must be a string or a list of text parts");
        }
        List<String> texts = new ArrayList<>(c.size());
        for (int i = 0; i < c.size(); i++) {
            JsonNode part = c.get(i);
            String partField = field + "[" + i + "]";
            if (part == null || !part.isObject() || !part.path("type").isString()) {
                throw new InvalidRequestException(partField, "a content part must be an object with a type");
            }
            String type = part.get("type").stringValue();
            if (!type.equals("text")) {
                throw new InvalidRequestException(partField + ".type", switch (type) {
                    case "image_url", "image" -> "images are not supported: this model reads text";
                    case "input_audio", "audio" -> "audio is not supported: this model reads text";
                    case "file" -> "files are not supported: give their text as a text part";
                    default -> "content parts are of type text, got " + type;
                });
            }
            for (String key : part.propertyNames()) {
                if (!key.equals("type") && !key.equals("text")) {
                    throw new InvalidRequestException(partField + "." + key, "unknown field " + key + " in a text part");
                }
            }
            if (!part.path("text").isString()) {
                throw new InvalidRequestException(partField + ".text", "a text part's text must be a string");
            }
            texts.add(part.get("text").stringValue());
        }
        return String.join("\n", texts);
    }

    private static void refuseNonEmpty(JsonNode message, String field, String key, String why) {
        JsonNode v = message.get(key);
        if (v != null && !v.isNull() && !(v.isArray() && v.isEmpty())) {
            throw new InvalidRequestException(field + "." + key, why);
        }
    }

    private void refuseUnsupported() {
        if (n != null && (n < 1 || n > ChoiceSeeds.MAX_CHOICES)) {
            throw new InvalidRequestException("n", "n must be in [1, " + ChoiceSeeds.MAX_CHOICES + "], got " + n);
        }
        requireNeutral("functions", absentOrEmpty(functions), "functions (deprecated) are not supported: give them "
                + "as tools");
        requireNeutral("function_call", functionCall == null || functionCall.isNull()
                || functionCall.isString() && functionCall.stringValue().equals("none"), "function_call (deprecated) "
                + "must be none: use tool_choice");
        requireNeutral("audio", audio == null || audio.isNull(), "audio output is not supported");
        requireNeutral("modalities", modalities == null || modalities.isNull()
                || modalities.isArray() && modalities.size() == 1 && "text".equals(modalities.get(0).asString(null)),
                "modalities must be [\"text\"]: only text is generated");
        requireNeutral("prediction", prediction == null || prediction.isNull(), "predicted outputs are not supported");
        requireNeutral("reasoning_effort", reasoningEffort == null, "reasoning_effort is not supported");
        requireNeutral("web_search_options", webSearchOptions == null || webSearchOptions.isNull(),
                "web search is not supported");
        requireNeutral("store", !Boolean.TRUE.equals(store), "store must be false: answers are not stored");
        requireNeutral("metadata", metadata == null || metadata.isEmpty(), "metadata is not supported: answers are "
                + "not stored");
        requireNeutral("service_tier", serviceTier == null || Set.of("auto", "default").contains(serviceTier),
                "service_tier must be auto or default");
        requireNeutral("presence_penalty", presencePenalty == null || presencePenalty == 0,
                "presence_penalty is not supported; only 0");
        requireNeutral("frequency_penalty", frequencyPenalty == null || frequencyPenalty == 0,
                "frequency_penalty is not supported; only 0");
        requireNeutral("logit_bias", logitBias == null || logitBias.isEmpty(), "logit_bias is not supported; only {}");
        if (maxTokens != null && maxCompletionTokens != null && !Objects.equals(maxTokens, maxCompletionTokens)) {
            throw new InvalidRequestException("max_completion_tokens", "max_tokens (" + maxTokens + ") and "
                    + "max_completion_tokens (" + maxCompletionTokens + ") disagree: give one of them");
        }
        if (topLogprobs != null && (topLogprobs < 0 || topLogprobs > RequestValidator.MAX_LOGPROBS)) {
            throw new InvalidRequestException("top_logprobs", "top_logprobs must be in [0, "
                    + RequestValidator.MAX_LOGPROBS + "], got " + topLogprobs);
        }
        requireNeutral("top_logprobs", topLogprobs == null || withLogprobs(), "top_logprobs needs logprobs: true");
        if (topK != null && topK < -1) {
            throw new InvalidRequestException("top_k", "top_k must be a number of tokens, or -1 or 0 for all of them, got "
                    + topK);
        }
        if (streamOptions != null && !streaming()) {
            throw new InvalidRequestException("stream_options", "stream_options is only allowed with stream: true");
        }
        requireNeutral("stream_options.continuous_usage_stats",
                streamOptions == null || !Boolean.TRUE.equals(streamOptions.continuousUsageStats()),
                "stream_options.continuous_usage_stats is not supported; the usage comes once, at the end");
    }

    /**
     * The functions the model may call and whether it must; refuses what cannot be served with them: a
     * {@code response_format} beside a choice that constrains the reply to calls, streamed logprobs beside tools (a
     * stream holds back text that may be a call).
     */
    Tools readTools() {
        Tools t = Tools.parse(tools, toolChoice, parallelToolCalls);
        if (t.choice().constrained() && ResponseFormat.parse(responseFormat, "response_format").constrained()) {
            throw new InvalidRequestException("response_format", "response_format cannot constrain a reply that "
                    + "tool_choice " + t.choice().mode().name().toLowerCase(java.util.Locale.ROOT) + " constrains to "
                    + "tool calls");
        }
        requireNeutral("logprobs", !t.active() || !streaming() || !withLogprobs(), "logprobs are not streamed with "
                + "tools: ask for the reply whole");
        return t;
    }

    private static boolean absentOrEmpty(JsonNode v) {
        return v == null || v.isNull() || v.isArray() && v.isEmpty();
    }

    private static void requireNeutral(String field, boolean neutral, String message) {
        if (!neutral) {
            throw new InvalidRequestException(field, message);
        }
    }
}
