package io.butterfly.coordinator.api.openai;

import java.util.List;
import java.util.function.Function;

/**
 * The text each generated token adds after the tokens before it, for logprobs (vLLM decodes logprob tokens the same
 * way): decoded alone, a SentencePiece word would lose its leading space. A token that ends inside a UTF-8 character
 * adds U+FFFD (or nothing); those tokens' texts then differ from the answer's text, which has the whole character.
 * One per choice, fed the tokens in order; not thread-safe.
 */
final class TokenTexts {

    /** Tokens before the one decoded: enough for its text to decode as it does in the whole sequence. */
    private static final int CONTEXT = 4;

    private final Function<long[], String> decoder;
    private final long[] context;
    private int contextLength;

    /**
     * @param decoder    token ids to text, as the answer's text is decoded
     * @param promptTail the prompt's last tokens: the first generated token's context
     */
    TokenTexts(Function<long[], String> decoder, List<Long> promptTail) {
        this.decoder = decoder;
        this.context = new long[CONTEXT];
        for (Long id : promptTail.subList(Math.max(0, promptTail.size() - CONTEXT), promptTail.size())) {
            push(id);
        }
    }

    /** The text of the context so far. */
    String before() {
        return decoder.apply(contextIds(null));
    }

    /** The text {@code id} adds after the context, which decodes to {@code before}. */
    String added(String before, long id) {
        String with = decoder.apply(contextIds(id));
        return with.startsWith(before) ? with.substring(before.length()) : decoder.apply(new long[]{id});
    }

    /** {@code id} was generated: it is part of the next token's context. */
    void push(long id) {
        if (contextLength == CONTEXT) {
            System.arraycopy(context, 1, context, 0, CONTEXT - 1);
            contextLength--;
        }
        context[contextLength++] = id;
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
}
