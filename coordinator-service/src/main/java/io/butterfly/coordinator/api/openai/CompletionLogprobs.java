package io.butterfly.coordinator.api.openai;

import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * OpenAI's completion {@code logprobs} object: per token its text, its log-probability, the step's most likely
 * tokens (text to log-probability, the chosen token always among them, as OpenAI documents) and where its text
 * starts in the completion. One per choice, so a stream's offsets run on across its chunks; not thread-safe.
 *
 * <p>A token's text is what it adds after the tokens before it (vLLM decodes logprob tokens the same way): decoded
 * alone, a SentencePiece word would lose its leading space. A token that ends inside a UTF-8 character adds U+FFFD
 * (or nothing); those tokens' texts then differ from the completion's text, which has the whole character.
 */
final class CompletionLogprobs {

    /** Tokens before the one decoded: enough for its text to decode as it does in the whole sequence. */
    private static final int CONTEXT = 4;

    private final Function<long[], String> decoder;
    private final long[] context;
    private int contextLength;
    private int offset;

    /**
     * @param decoder    token ids to text, as the completion's text is decoded
     * @param promptTail the prompt's last tokens: the first generated token's context
     */
    CompletionLogprobs(Function<long[], String> decoder, List<Long> promptTail) {
        this.decoder = decoder;
        this.context = new long[CONTEXT];
        for (Long id : promptTail.subList(Math.max(0, promptTail.size() - CONTEXT), promptTail.size())) {
            push(id);
        }
    }

    /** The object for these tokens, which follow those given before. */
    Map<String, Object> next(List<Long> ids, List<Double> logprobs, List<List<TokenLogprob>> top) {
        List<String> tokens = new ArrayList<>(ids.size());
        List<Map<String, Double>> topByText = new ArrayList<>(ids.size());
        List<Integer> offsets = new ArrayList<>(ids.size());
        for (int i = 0; i < ids.size(); i++) {
            String before = decoder.apply(contextIds(null));
            String text = added(before, ids.get(i));
            Map<String, Double> step = new LinkedHashMap<>();
            for (TokenLogprob t : top.get(i)) { // most likely first: where two ids read alike, the likelier stays
                step.putIfAbsent(added(before, t.tokenId()), t.logprob());
            }
            step.putIfAbsent(text, logprobs.get(i));
            tokens.add(text);
            topByText.add(step);
            offsets.add(offset);
            offset += text.length();
            push(ids.get(i));
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tokens", tokens);
        m.put("token_logprobs", logprobs);
        m.put("top_logprobs", topByText);
        m.put("text_offset", offsets);
        return m;
    }

    /** The text {@code id} adds after the context, which decodes to {@code before}. */
    private String added(String before, long id) {
        String with = decoder.apply(contextIds(id));
        return with.startsWith(before) ? with.substring(before.length()) : decoder.apply(new long[]{id});
    }

    /** The context's ids, then {@code next} if not null. */
    private long[] contextIds(Long next) {
        long[] ids = new long[contextLength + (next == null ? 0 : 1)];
        System.arraycopy(context, 0, ids, 0, contextLength);
        if (next != null) {
            ids[contextLength] = next;
        }
        return ids;
    }

    private void push(long id) {
        if (contextLength == CONTEXT) {
            System.arraycopy(context, 1, context, 0, CONTEXT - 1);
            contextLength--;
        }
        context[contextLength++] = id;
    }
}
