package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import java.nio.file.Path;
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

    private static final ModelConfig CONFIG = new ModelConfig(Architecture.LLAMA, 2, 16, 2, 2, 32, 512, 64, 1e-5,
            10000.0, false, 1, 2);

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
        IncrementalText text = new IncrementalText(IncrementalTextTest::decode);
        assertThat(text.add(ids[0])).isEmpty();
        assertThat(text.add(ids[1])).isEmpty();
        assertThat(text.add(ids[2])).isEqualTo("✓");
    }

    @Test
    void wordsComeOutWithTheirSpaces() {
        IncrementalText text = new IncrementalText(IncrementalTextTest::decode);
        StringBuilder out = new StringBuilder();
        for (long id : encode("the butterfly effect")) {
            out.append(text.add(id));
        }
        assertThat(out).hasToString("the butterfly effect");
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
            IncrementalText text = new IncrementalText(IncrementalTextTest::decode);
            List<String> pieces = new ArrayList<>();
            for (long id : ids) {
                pieces.add(text.add(id));
            }
            assertThat(String.join("", pieces)).as("text %s, ids %s", s, ids).isEqualTo(decode(ids));
            assertThat(pieces).noneMatch(p -> p.contains("\uFFFD"));
        }
    }

    /** Ids that do not form whole characters (a sampled byte token can) never end a piece inside one. */
    @Test
    void randomIdsNeverGiveOutHalfACharacter() {
        Random random = new Random(11);
        for (int trial = 0; trial < 200; trial++) {
            IncrementalText text = new IncrementalText(IncrementalTextTest::decode);
            long[] ids = random.longs(1 + random.nextInt(20), 3, CONFIG.vocabSize()).toArray();
            StringBuilder out = new StringBuilder();
            for (long id : ids) {
                String piece = text.add(id);
                assertThat(piece).doesNotEndWith("\uFFFD");
                out.append(piece);
            }
            String whole = decode(ids);
            assertThat(whole).as("ids %s", ids).startsWith(out.toString());
        }
    }
}
