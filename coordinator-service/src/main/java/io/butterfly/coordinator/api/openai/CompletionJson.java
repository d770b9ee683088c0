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

    /** One prompt's completion: its choice's index, the generation, and its logprobs (null unless asked for). */
    record Choice(int index, GenerationResult result, CompletionLogprobs logprobs) {
    }

    /** A whole completion: a choice per prompt, the usage summed over them. */
    static Map<String, Object> completion(Header h, List<Choice> choices) {
        List<Map<String, Object>> out = new ArrayList<>(choices.size());
        int promptTokens = 0;
        int completionTokens = 0;
        for (Choice c : choices) {
            GenerationResult r = c.result();
            Map<String, Object> lp = c.logprobs() == null ? null
                    : c.logprobs().next(r.tokenIds(), r.tokenLogprobs(), r.topLogprobs());
            out.add(choice(c.index(), r.text(), lp, r.finishReason()));
            promptTokens += r.promptTokenIds().size();
            completionTokens += r.tokenIds().size();
        }
        Map<String, Object> m = object(h, out);
        m.put("usage", usage(promptTokens, completionTokens));
        return m;
    }

    /** One chunk of a stream: a token's text (and logprobs), or the end with its finish reason. */
    static Map<String, Object> chunk(Header h, String text, Map<String, Object> logprobs, String finishReason) {
        return object(h, List.of(choice(0, text, logprobs, finishReason)));
    }

    /** The last chunk of a stream asked for {@code stream_options.include_usage}: no choices, the usage. */
    static Map<String, Object> usageChunk(Header h, GenerationResult r) {
        Map<String, Object> m = object(h, List.of());
        m.put("usage", usage(r.promptTokenIds().size(), r.tokenIds().size()));
        return m;
    }

    private static Map<String, Object> usage(int promptTokens, int completionTokens) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("prompt_tokens", promptTokens);
        m.put("completion_tokens", completionTokens);
        m.put("total_tokens", promptTokens + completionTokens);
        return m;
    }

    private static Map<String, Object> object(Header h, List<Map<String, Object>> choices) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", h.id());
        m.put("object", "text_completion");
        m.put("created", h.created());
        m.put("model", h.model());
        m.put("choices", choices);
        return m;
    }

    private static Map<String, Object> choice(int index, String text, Map<String, Object> logprobs,
                                              String finishReason) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("index", index);
        m.put("text", text);
        m.put("logprobs", logprobs); // null when not asked, as OpenAI's API writes it
        m.put("finish_reason", finishReason);
        return m;
    }
}
