package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.butterfly.common.model.ModelConfig;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Streamed text against the real decoder of a byte-level BPE (the generated models' tokenizer, whose small vocabulary
 * leaves most non-ASCII characters as one token per UTF-8 byte).
 */
class IncrementalTextTest {

    private static final ModelConfig CONFIG = ScriptedCluster.TINY;

    @TempDir
    static Path dir;
    static HuggingFaceTokenizer tokenizer;

    @BeforeAll
    static void load() throws Exception {
        tokenizer = TestTokenizers.generated(CONFIG, dir);
    }

    @AfterAll
    static void close() {
        tokenizer.close();
    }

    private static String decode(long[] ids) {
        return tokenizer.decode(ids, true);
    }

    private static long[] encode(String text) {
        return tokenizer.encode(text, false, false).getIds();
    }

    @Test
    void aCharacterSplitOverTokensIsGivenOutWhenItsLastByteArrives() {
        long[] ids = encode("✓"); // three UTF-8 bytes, no merge for them in this vocabulary
        assertThat(ids).hasSize(3);
        IncrementalText text = new IncrementalText(IncrementalTextTest::decode, StopSequences.NONE);
        assertThat(text.add(ids[0], false).text()).isEmpty();
        assertThat(text.add(ids[1], false).text()).isEmpty();
        assertThat(text.add(ids[2], false).text()).isEqualTo("✓");
    }

    @Test
    void theLastTokenGivesOutWhatWasHeldBackAsTheWholeTextHasIt() {
        long[] ids = encode("a✓");
        IncrementalText text = new IncrementalText(IncrementalTextTest::decode, StopSequences.NONE);
        assertThat(text.add(ids[0], false).text()).isEqualTo("a");
        assertThat(text.add(ids[1], false).text()).isEmpty();
        String rest = text.add(ids[2], true).text(); // the generation stops inside the character
        assertThat("a" + rest).isEqualTo(decode(new long[] {ids[0], ids[1], ids[2]})).endsWith("\uFFFD");
    }

    /**
     * A decoder whose output for a token depends on where the window starts (a SentencePiece decoder drops the
     * first word's leading space): each piece is decoded with the tokens before it, so a space between words is kept,
     * where decoding each token alone would lose it.
     */
    @Test
    void aWordsLeadingSpaceIsKeptWhereTheDecoderDropsItAtTheStart() {
        String[] pieces = {"▁the", "▁butter", "fly", "▁effect"};
        IncrementalText text = new IncrementalText(ids -> {
            StringBuilder sb = new StringBuilder();
            for (long id : ids) {
                sb.append(pieces[(int) id].replace('▁', ' '));
            }
            return sb.length() > 0 && sb.charAt(0) == ' ' ? sb.substring(1) : sb.toString();
        }, StopSequences.NONE);
        List<String> out = new ArrayList<>();
        for (int i = 0; i < pieces.length; i++) {
            out.add(text.add(i, i == pieces.length - 1).text());
        }
        assertThat(out).containsExactly("the", " butter", "fly", " effect");
    }

    /** Property: whatever the tokens, the pieces given out join to the whole text and never hold a U+FFFD. */
    @Test
    void piecesJoinToTheWholeTextForRandomText() {
        String[] alphabet = {"a", "e", "t", " ", "  ", "é", "ß", "✓", "🦋", "\n", ".", "th", "ing", "1", "ж"};
        Random random = new Random(7);
        for (int trial = 0; trial < 300; trial++) {
            StringBuilder s = new StringBuilder();
            int length = 1 + random.nextInt(30);
            for (int i = 0; i < length; i++) {
                s.append(alphabet[random.nextInt(alphabet.length)]);
            }
            long[] ids = encode(s.toString());
            IncrementalText text = new IncrementalText(IncrementalTextTest::decode, StopSequences.NONE);
            List<String> pieces = new ArrayList<>();
            for (int i = 0; i < ids.length; i++) {
                pieces.add(text.add(ids[i], i == ids.length - 1).text());
            }
            assertThat(String.join("", pieces)).as("text %s, ids %s", s, ids).isEqualTo(decode(ids));
            assertThat(pieces).noneMatch(p -> p.contains("\uFFFD"));
        }
    }

    /**
     * Ids that do not form whole characters (a sampled byte token can): no piece but the last ends inside one, and
     * the pieces join to the whole text.
     */
    @Test
    void randomIdsNeverGiveOutHalfACharacterBeforeTheEnd() {
        Random random = new Random(11);
        for (int trial = 0; trial < 200; trial++) {
            IncrementalText text = new IncrementalText(IncrementalTextTest::decode, StopSequences.NONE);
            long[] ids = random.longs(1 + random.nextInt(20), 3, CONFIG.vocabSize()).toArray();
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < ids.length; i++) {
                boolean last = i == ids.length - 1;
                String piece = text.add(ids[i], last).text();
                if (!last) {
                    assertThat(piece).doesNotEndWith("\uFFFD");
                }
                out.append(piece);
            }
            assertThat(out).as("ids %s", ids).hasToString(decode(ids));
        }
    }

    /** A decoder of fixed pieces, token i decoding to {@code pieces[i]}, for the stop-string cases. */
    private static IncrementalText over(String[] pieces, String... stop) {
        return new IncrementalText(ids -> {
            StringBuilder sb = new StringBuilder();
            for (long id : ids) {
                sb.append(pieces[(int) id]);
            }
            return sb.toString();
        }, new StopSequences(List.of(stop)));
    }

    @Test
    void aStopStringIsHeldBackWhileItFormsAndEndsTheTextBeforeIt() {
        String[] pieces = {"Hel", "lo", " wor", "ld", "!"};
        IncrementalText text = over(pieces, "world");
        assertThat(text.add(0, false)).isEqualTo(new IncrementalText.Piece("Hel", false));
        assertThat(text.add(1, false)).isEqualTo(new IncrementalText.Piece("lo", false));
        assertThat(text.add(2, false)).isEqualTo(new IncrementalText.Piece(" ", false)); // "wor" may begin "world"
        assertThat(text.add(3, false)).isEqualTo(new IncrementalText.Piece("", true));
        assertThat(text.textBeforeStop()).isEqualTo("Hello ");
    }

    @Test
    void textThatTurnsOutNotToBeAStopStringIsGivenOut() {
        IncrementalText text = over(new String[] {"w", "o", "r", "wo"}, "wow");
        assertThat(text.add(0, false).text()).isEmpty();
        assertThat(text.add(1, false).text()).isEmpty();
        assertThat(text.add(2, false).text()).isEqualTo("wor");
        assertThat(text.add(3, true)).isEqualTo(new IncrementalText.Piece("wo", false)); // the last token gives all
    }

    @Test
    void theEarliestOfSeveralStopStringsEndsTheText() {
        IncrementalText text = over(new String[] {"a", "bc. x", "yz"}, "xyz", ".");
        text.add(0, false);
        IncrementalText.Piece piece = text.add(1, false);
        assertThat(piece).isEqualTo(new IncrementalText.Piece("bc", true));
        assertThat(text.textBeforeStop()).isEqualTo("abc");
    }

    /** The stop string that is complete first wins, however the tokens split the text: "bc" ends before "abcde" does. */
    @Test
    void theStopStringCompleteFirstWinsWhateverTheTokens() {
        for (String[] pieces : new String[][] {{"a", "bcde"}, {"a", "bc", "de"}, {"abcde"}, {"ab", "c", "d", "e"}}) {
            IncrementalText text = over(pieces, "abcde", "bc");
            StringBuilder out = new StringBuilder();
            boolean stopped = feed(text, pieces.length, out);
            assertThat(stopped).isTrue();
            assertThat(text.textBeforeStop()).as(List.of(pieces).toString()).isEqualTo("a");
            assertThat(out).hasToString("a");
        }
    }

    /** A stop string complete before a character the token leaves unfinished ends the generation at that token. */
    @Test
    void aStopStringBeforeAnUnfinishedCharacterEndsTheGenerationAtOnce() {
        byte[] check = "✓".getBytes(StandardCharsets.UTF_8);
        byte[][] tokens = {concat("ax".getBytes(StandardCharsets.UTF_8), new byte[] {check[0]}),
                concat(new byte[] {check[1], check[2]}, "z".getBytes(StandardCharsets.UTF_8))};
        IncrementalText text = new IncrementalText(ids -> {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            for (long id : ids) {
                bytes.writeBytes(tokens[(int) id]);
            }
            return bytes.toString(StandardCharsets.UTF_8); // malformed input decodes as U+FFFD, as a byte-level BPE's
        }, new StopSequences(List.of("x")));
        assertThat(text.add(0, false)).isEqualTo(new IncrementalText.Piece("a", true));
        assertThat(text.textBeforeStop()).isEqualTo("a");
    }

    /** Adds tokens 0..count-1 (the last marked so) until one stops the text; appends what they give out to {@code out}. */
    private static boolean feed(IncrementalText text, int count, StringBuilder out) {
        for (int i = 0; i < count; i++) {
            IncrementalText.Piece p = text.add(i, i == count - 1);
            out.append(p.text());
            if (p.stopped()) {
                return true;
            }
        }
        return false;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /**
     * Property: over random text and stop strings, the pieces join to the text before the first stop string when one
     * occurs (and to the whole text otherwise), and nothing past a stop string's start is ever given out.
     */
    @Test
    void piecesNeverPassTheFirstStopString() {
        String[] alphabet = {"a", "b", "ab", " ", "ba", "é", "✓"};
        Random random = new Random(3);
        for (int trial = 0; trial < 500; trial++) {
            String[] pieces = new String[1 + random.nextInt(12)];
            for (int i = 0; i < pieces.length; i++) {
                pieces[i] = alphabet[random.nextInt(alphabet.length)];
            }
            String whole = String.join("", pieces);
            String[] stops = new String[1 + random.nextInt(3)];
            for (int j = 0; j < stops.length; j++) { // mostly taken from the text, of 1 to 4 characters
                int from = random.nextInt(whole.length());
                stops[j] = random.nextInt(4) == 0 ? "b a"
                        : whole.substring(from, Math.min(whole.length(), from + 1 + random.nextInt(4)));
            }
            IncrementalText text = over(pieces, stops);
            StringBuilder out = new StringBuilder();
            boolean stopped = feed(text, pieces.length, out);
            // Independently: the stop string whose end comes first in the whole text (the longer on a tie).
            int at = -1;
            int end = Integer.MAX_VALUE;
            for (String stop : stops) {
                int i = whole.indexOf(stop);
                if (i >= 0 && (i + stop.length() < end || i + stop.length() == end && i < at)) {
                    at = i;
                    end = i + stop.length();
                }
            }
            String why = "pieces " + List.of(pieces) + ", stops " + List.of(stops);
            assertThat(stopped).as(why).isEqualTo(at >= 0);
            assertThat(out).as(why).hasToString(at >= 0 ? whole.substring(0, at) : whole);
        }
    }
}
