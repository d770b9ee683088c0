package io.butterfly.coordinator.api.openai;

import io.butterfly.common.api.OpenAiCompletion;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * OpenAI's completion {@code logprobs} object: per token its text ({@link TokenTexts}), its log-probability, the
 * step's most likely tokens (text to log-probability, the chosen token always among them, as OpenAI documents) and
 * where its text starts in the completion. One per choice, so a stream's offsets run on across its chunks; not
 * thread-safe.
 */
final class CompletionLogprobs {

    private final TokenTexts texts;
    private int offset;

    /**
     * @param decoder    token ids to text, as the completion's text is decoded
     * @param promptTail the prompt's last tokens: the first generated token's context
     */
    CompletionLogprobs(Function<long[], String> decoder, List<Long> promptTail) {
        this.texts = new TokenTexts(decoder, promptTail);
    }

    /** The object for these tokens, which follow those given before. */
    OpenAiCompletion.Logprobs next(List<Long> ids, List<Double> logprobs, List<List<TokenLogprob>> top) {
        List<String> tokens = new ArrayList<>(ids.size());
        List<Map<String, Double>> topByText = new ArrayList<>(ids.size());
        List<Integer> offsets = new ArrayList<>(ids.size());
        for (int i = 0; i < ids.size(); i++) {
            String before = texts.before();
            String text = texts.added(before, ids.get(i));
            Map<String, Double> step = new LinkedHashMap<>();
            for (TokenLogprob t : top.get(i)) { // most likely first: where two ids read alike, the likelier stays
                step.putIfAbsent(texts.added(before, t.tokenId()), t.logprob());
            }
            step.putIfAbsent(text, logprobs.get(i));
            tokens.add(text);
            topByText.add(step);
            offsets.add(offset);
            offset += text.length();
            texts.push(ids.get(i));
        }
        return new OpenAiCompletion.Logprobs(tokens, logprobs, topByText, offsets);
    }
}
