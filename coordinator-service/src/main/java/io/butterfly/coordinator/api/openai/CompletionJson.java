package io.butterfly.coordinator.api.openai;

import io.butterfly.common.api.OpenAiCompletion;
import io.butterfly.common.api.OpenAiUsage;
import io.butterfly.coordinator.inference.GenerationResult;
import java.util.ArrayList;
import java.util.List;

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

    /**
     * A whole completion: {@code n} choices per prompt, in order; the usage sums every choice's tokens and each
     * prompt's once (as OpenAI counts {@code n}).
     */
    static OpenAiCompletion completion(Header h, List<Choice> choices, int n) {
        int promptTokens = 0;
        int completionTokens = 0;
        for (Choice c : choices) {
            promptTokens += c.index() % n == 0 ? c.result().promptTokenIds().size() : 0;
            completionTokens += c.result().tokenIds().size();
        }
        return completion(h, choices, OpenAiUsage.of(promptTokens, completionTokens));
    }

    /** A whole completion of {@code choices}, with the usage counted by the caller ({@code best_of}'s candidates). */
    static OpenAiCompletion completion(Header h, List<Choice> choices, OpenAiUsage usage) {
        List<OpenAiCompletion.Choice> out = new ArrayList<>(choices.size());
        for (Choice c : choices) {
            GenerationResult r = c.result();
            OpenAiCompletion.Logprobs lp = c.logprobs() == null ? null
                    : c.logprobs().next(r.tokenIds(), r.tokenLogprobs(), r.topLogprobs());
            out.add(new OpenAiCompletion.Choice(c.index(), r.text(), lp, r.finishReason()));
        }
        return object(h, out, usage);
    }

    /** One chunk of a stream: a token's text (and logprobs), or the end with its finish reason. */
    static OpenAiCompletion chunk(Header h, String text, OpenAiCompletion.Logprobs logprobs, String finishReason) {
        return chunk(h, 0, text, logprobs, finishReason);
    }

    /** One chunk of choice {@code index} of a stream. */
    static OpenAiCompletion chunk(Header h, int index, String text, OpenAiCompletion.Logprobs logprobs,
                                  String finishReason) {
        return object(h, List.of(new OpenAiCompletion.Choice(index, text, logprobs, finishReason)), null);
    }

    /** The last chunk of a stream asked for {@code stream_options.include_usage}: no choices, the usage. */
    static OpenAiCompletion usageChunk(Header h, GenerationResult r) {
        return usageChunk(h, OpenAiUsage.of(r.promptTokenIds().size(), r.tokenIds().size()));
    }

    static OpenAiCompletion usageChunk(Header h, OpenAiUsage usage) {
        return object(h, List.of(), usage);
    }

    /** The usage of choices of one prompt: the prompt once, every choice's tokens (as OpenAI counts {@code n}). */
    static OpenAiUsage usageOfChoices(List<GenerationResult> results) {
        return OpenAiUsage.of(results.get(0).promptTokenIds().size(),
                results.stream().mapToInt(r -> r.tokenIds().size()).sum());
    }

    private static OpenAiCompletion object(Header h, List<OpenAiCompletion.Choice> choices, OpenAiUsage usage) {
        return new OpenAiCompletion(h.id(), OpenAiCompletion.OBJECT, h.created(), h.model(), choices, usage);
    }
}
