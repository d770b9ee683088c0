package io.butterfly.coordinator.inference;

import java.util.Arrays;
import java.util.function.Function;

/**
 * A generation's text as it grows, token by token: {@link #add} answers only text that later tokens cannot change,
 * and says when a stop string has ended the generation.
 *
 * <p>Decoding: a byte-level BPE token can end inside a UTF-8 character, which decodes to U+FFFD until the next
 * token completes it, so such text is held back. Decoding a token alone would lose what depends on its neighbours
 * (a SentencePiece word's leading space), so each step decodes a short window: the tokens since the last settled
 * text plus the ones just before them, and settles what the new tokens added. This is Hugging Face
 * text-generation-inference's {@code decode_token}.
 *
 * <p>Stop strings: settled text that a stop string begins with is held back too, until a later token either
 * completes the stop string (the generation ends before it) or shows it is not one.
 */
final class IncrementalText {

    /** What one token gave out, and whether a stop string ended the generation with it. */
    record Piece(String text, boolean stopped) {
    }

    private final Function<long[], String> decoder;
    private final StopSequences stops;
    private long[] ids = new long[32];
    private int count;
    /** Start of the decoding window: tokens decoded only so the new ones decode as they do in the whole text. */
    private int prefixOffset;
    /** Tokens before this are settled text. */
    private int readOffset;
    /** The settled text: the window's pieces joined. */
    private final StringBuilder settled = new StringBuilder();
    /** How much of {@link #settled} has been given out. */
    private int given;
    /** The text before the stop string that ended the generation, once one has; null before. */
    private String beforeStop;
    /**
     * Text the window holds back because it ends inside a character, without the U+FFFD of its unfinished end: a stop
     * string can be complete in it (then the generation ends at this token, not whenever the character completes).
     */
    private String unsettled = "";

    /** @param decoder token ids to text, as the whole generation's text is decoded */
    IncrementalText(Function<long[], String> decoder, StopSequences stops) {
        this.decoder = decoder;
        this.stops = stops;
    }

    /**
     * Adds the next generated token. Returns the text it gives out: possibly empty, never ending in U+FFFD nor in
     * the beginning of a stop string, except for the {@code last} token, which gives out all the rest (held-back
     * bytes decode as U+FFFD there, as they do in the whole generation's text), so the pieces join to that text.
     */
    Piece add(long tokenId, boolean last) {
        if (beforeStop != null) {
            throw new IllegalStateException("a stop string already ended the generation");
        }
        int before = settled.length();
        settled.append(settle(tokenId, last));
        if (stops.isEmpty()) {
            return new Piece(giveOutTo(settled.length()), false);
        }
        String seen = settled + unsettled;
        int stop = stops.find(seen, before);
        if (stop >= 0) {
            // Nothing from a possible stop string's start on was given out (pendingPrefix), so stop >= given.
            beforeStop = seen.substring(0, Math.max(given, stop));
            String out = beforeStop.substring(given);
            given = beforeStop.length();
            return new Piece(out, true);
        }
        int release = last ? settled.length() : settled.length() - stops.pendingPrefix(seen.substring(0, settled.length()));
        return new Piece(giveOutTo(release), false);
    }

    /** Whether a stop string has ended the generation. */
    boolean stopped() {
        return beforeStop != null;
    }

    /** The generation's text up to the stop string that ended it (only once one has). */
    String textBeforeStop() {
        if (beforeStop == null) {
            throw new IllegalStateException("no stop string ended the generation");
        }
        return beforeStop;
    }

    private String giveOutTo(int end) {
        if (end <= given) {
            return "";
        }
        String out = settled.substring(given, end);
        given = end;
        return out;
    }

    /** The text the window decoding settles with this token. */
    private String settle(long tokenId, boolean last) {
        if (count == ids.length) {
            ids = Arrays.copyOf(ids, count * 2);
        }
        ids[count++] = tokenId;
        String prefix = decoder.apply(Arrays.copyOfRange(ids, prefixOffset, readOffset));
        String text = decoder.apply(Arrays.copyOfRange(ids, prefixOffset, count));
        if (text.length() > prefix.length() && (last || !text.endsWith("\uFFFD"))) {
            prefixOffset = readOffset;
            readOffset = count;
            unsettled = "";
            return text.substring(prefix.length());
        }
        int end = text.length();
        while (end > prefix.length() && text.charAt(end - 1) == '\uFFFD') {
            end--;
        }
        unsettled = end > prefix.length() ? text.substring(prefix.length(), end) : "";
        return "";
    }
}
