package io.butterfly.coordinator.api.openai;

import io.butterfly.coordinator.inference.GenerationResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** OpenAI's {@code text_completion} objects: a whole completion, or one chunk of a streamed one. */
final class CompletionJson {

    private CompletionJson() {
    }

    /** The identity every object of one completion carries. */
    record Header(String id, long created, String model) {

        static Header of(String taskId, long created, String model) {
            return new Header("cmpl-" + taskId, created, model);
        }
    }

    /** A whole completion; {@code logprobs} null unless asked for. */
    static Map<String, Object> completion(Header h, GenerationResult r, CompletionLogprobs logprobs) {
        Map<String, Object> lp = logprobs == null ? null
                : logprobs.next(r.tokenIds(), r.tokenLogprobs(), r.topLogprobs());
        Map<String, Object> m = object(h, List.of(choice(r.text(), lp, r.finishReason())));
        m.put("usage", usage(r));
        return m;
    }

    /** One chunk of a stream: a token's text (and logprobs), or the end with its finish reason. */
    static Map<String, Object> chunk(Header h, String text, Map<String, Object> logprobs, String finishReason) {
        return object(h, List.of(choice(text, logprobs, finishReason)));
    }

    /** The last chunk of a stream asked for {@code stream_options.include_usage}: no choices, the usage. */
    static Map<String, Object> usageChunk(Header h, GenerationResult r) {
        Map<String, Object> m = object(h, List.of());
        m.put("usage", usage(r));
        return m;
    }

    static Map<String, Object> usage(GenerationResult r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("prompt_tokens", r.promptTokenIds().size());
        m.put("completion_tokens", r.tokenIds().size());
        m.put("total_tokens", r.promptTokenIds().size() + r.tokenIds().size());
        return m;
    }

    private static Map<String, Object> object(Header h, List<Map<String, Object>> choices) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", h.id());
        m.put("object", "text_completion");
        m.put("created", h.created());
        m.put("model", h.model());
        m.put("choices", new ArrayList<>(choices));
        return m;
    }

    private static Map<String, Object> choice(String text, Map<String, Object> logprobs, String finishReason) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("index", 0);
        m.put("text", text);
        m.put("logprobs", logprobs); // null when not asked, as OpenAI's API writes it
        m.put("finish_reason", finishReason);
        return m;
    }
}
