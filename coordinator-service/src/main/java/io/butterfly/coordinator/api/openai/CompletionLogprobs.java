package io.butterfly.coordinator.api.openai;

import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongFunction;

/**
 * OpenAI's completion {@code logprobs} object: per token its text, its log-probability, the step's most likely
 * tokens (text to log-probability, the chosen token always among them, as OpenAI documents) and where its text
 * starts in the completion. A stream keeps one of these, so offsets run on across its chunks.
 */
final class CompletionLogprobs {

    private final LongFunction<String> tokenText;
    private int offset;

    /** {@code tokenText}: one token's text on its own (a byte of a longer character shows as U+FFFD). */
    CompletionLogprobs(LongFunction<String> tokenText) {
        this.tokenText = tokenText;
    }

    /** The object for these tokens, which follow those given before. */
    Map<String, Object> next(List<Long> ids, List<Double> logprobs, List<List<TokenLogprob>> top) {
        List<String> tokens = new ArrayList<>(ids.size());
        List<Map<String, Double>> topByText = new ArrayList<>(ids.size());
        List<Integer> offsets = new ArrayList<>(ids.size());
        for (int i = 0; i < ids.size(); i++) {
            String text = tokenText.apply(ids.get(i));
            tokens.add(text);
            offsets.add(offset);
            offset += text.length();
            Map<String, Double> step = new LinkedHashMap<>();
            for (TokenLogprob t : top.get(i)) { // most likely first: where two ids read alike, the likelier stays
                step.putIfAbsent(tokenText.apply(t.tokenId()), t.logprob());
            }
            step.putIfAbsent(text, logprobs.get(i));
            topByText.add(step);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tokens", tokens);
        m.put("token_logprobs", logprobs);
        m.put("top_logprobs", topByText);
        m.put("text_offset", offsets);
        return m;
    }
}
