package io.butterfly.coordinator.inference;

import java.util.Arrays;
import java.util.function.Function;

/**
 * A generation's text as it grows, token by token, for streaming: {@link #add} answers only text that later
 * tokens cannot change. A byte-level BPE token can end inside a UTF-8 character, which decodes to U+FFFD until the
 * next token completes it, so such text is held back. Decoding a token alone would lose what depends on its
 * neighbours (a SentencePiece word's leading space), so each step decodes a short window: the tokens since the
 * last text given out plus the ones just before them, and gives out what the new tokens added. This is Hugging Face
 * text-generation-inference's {@code decode_token}.
 */
final class IncrementalText {

    private final Function<long[], String> decoder;
    private long[] ids = new long[32];
    private int count;
    /** Start of the context window: tokens decoded only so the new ones decode as they do in the whole text. */
    private int prefixOffset;
    /** Tokens before this have been given out as text. */
    private int readOffset;

    /** @param decoder token ids to text, as the whole generation's text is decoded */
    IncrementalText(Function<long[], String> decoder) {
        this.decoder = decoder;
    }

    /**
     * Adds the next generated token; returns the text it settles (possibly empty, never ending in U+FFFD), or, for
     * the {@code last} token, all text not yet given out (held-back bytes decode as U+FFFD there, as they do in the
     * whole generation's text), so the pieces join to that text.
     */
    String add(long tokenId, boolean last) {
        if (count == ids.length) {
            ids = Arrays.copyOf(ids, count * 2);
        }
        ids[count++] = tokenId;
        String prefix = decoder.apply(Arrays.copyOfRange(ids, prefixOffset, readOffset));
        String text = decoder.apply(Arrays.copyOfRange(ids, prefixOffset, count));
        if (text.length() > prefix.length() && (last || !text.endsWith("\uFFFD"))) {
            prefixOffset = readOffset;
            readOffset = count;
            return text.substring(prefix.length());
        }
        return "";
    }
}
