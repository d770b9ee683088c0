package io.butterfly.coordinator.api.openai;

import io.butterfly.coordinator.inference.GenerationResult;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** OpenAI's {@code chat.completion} objects: a whole answer, or one chunk of a streamed one. */
final class ChatJson {

    static final String ASSISTANT = "assistant";

    private ChatJson() {
    }

    /** The identity every object of one answer carries. */
    record Header(String id, long created, String model) {

        static Header of(String taskId, long created, String model) {
            return new Header("chatcmpl-" + taskId, created, model);
        }
    }

    /** A whole answer: the assistant's message, its logprobs (null unless asked for) and the usage. */
    static Map<String, Object> completion(Header h, GenerationResult r, Map<String, Object> logprobs) {
        Map<String, Object> message = new LinkedHashMap<>();
        message.put("role", ASSISTANT);
        message.put("content", r.text());
        message.put("refusal", null);
        Map<String, Object> choice = new LinkedHashMap<>();
        choice.put("index", 0);
        choice.put("message", message);
        choice.put("logprobs", logprobs);
        choice.put("finish_reason", r.finishReason());
        Map<String, Object> m = object(h, "chat.completion", List.of(choice));
        m.put("usage", usage(r));
        return m;
    }

    /** The first chunk of a stream: the role of the message that follows. */
    static Map<String, Object> roleChunk(Header h) {
        Map<String, Object> delta = new LinkedHashMap<>();
        delta.put("role", ASSISTANT);
        delta.put("content", "");
        return chunk(h, delta, null, null);
    }

    /** A chunk of the message's text (and its tokens' logprobs). */
    static Map<String, Object> contentChunk(Header h, String text, Map<String, Object> logprobs) {
        Map<String, Object> delta = new LinkedHashMap<>();
        delta.put("content", text);
        return chunk(h, delta, logprobs, null);
    }

    /** The chunk that ends the message: an empty delta and the finish reason. */
    static Map<String, Object> finishChunk(Header h, String finishReason) {
        return chunk(h, Map.of(), null, finishReason);
    }

    /** The last chunk of a stream asked for {@code stream_options.include_usage}: no choices, the usage. */
    static Map<String, Object> usageChunk(Header h, GenerationResult r) {
        Map<String, Object> m = object(h, "chat.completion.chunk", List.of());
        m.put("usage", usage(r));
        return m;
    }

    private static Map<String, Object> chunk(Header h, Map<String, Object> delta, Map<String, Object> logprobs,
                                             String finishReason) {
        Map<String, Object> choice = new LinkedHashMap<>();
        choice.put("index", 0);
        choice.put("delta", delta);
        choice.put("logprobs", logprobs);
        choice.put("finish_reason", finishReason);
        return object(h, "chat.completion.chunk", List.of(choice));
    }

    private static Map<String, Object> usage(GenerationResult r) {
        int prompt = r.promptTokenIds().size();
        int completion = r.tokenIds().size();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("prompt_tokens", prompt);
        m.put("completion_tokens", completion);
        m.put("total_tokens", prompt + completion);
        return m;
    }

    private static Map<String, Object> object(Header h, String object, List<Map<String, Object>> choices) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", h.id());
        m.put("object", object);
        m.put("created", h.created());
        m.put("model", h.model());
        m.put("choices", choices);
        return m;
    }
}
