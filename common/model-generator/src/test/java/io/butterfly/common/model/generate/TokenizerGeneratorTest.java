package io.butterfly.common.model.generate;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class TokenizerGeneratorTest {

    static final Map<String, String> OPTIONS = Map.of("addSpecialTokens", "true", "truncation", "false", "padding", "false");
    static final String[] TEXTS = {
        "Hello, world! The butterfly flies over the river.",
        "Numbers 12345 and 3.14159; unicode: café, naïve, 日本語, emoji 🦋.",
        "  leading spaces\nnew lines\ttabs   and trailing  ",
        "What is the capital of France?",
    };

    @TempDir
    Path tmp;

    @Test
    void llamaTokenizerLoadsRoundTripsAndPrependsBos() throws Exception {
        for (int vocab : new int[]{260, 512, 4096, 32000}) {
            ModelConfig c = new ModelConfig(Architecture.LLAMA, 1, 16, 2, 2, 32, vocab, 64, 1e-5, 10000.0, false, 1, 2);
            Path file = tmp.resolve("llama-" + vocab + ".json");
            TokenizerGenerator.write(c, file);
            try (HuggingFaceTokenizer tok = HuggingFaceTokenizer.newInstance(file, OPTIONS)) {
                assertVocab(file, vocab);
                for (String text : TEXTS) {
                    long[] ids = tok.encode(text).getIds();
                    assertThat(ids[0]).as("bos first").isEqualTo(1);
                    assertThat(java.util.Arrays.stream(ids)).allMatch(id -> id >= 0 && id < vocab);
                    assertThat(java.util.Arrays.stream(ids).skip(1)).doesNotContain(1L, 2L);
                    assertThat(tok.decode(ids, true)).isEqualTo(text);
                    assertThat(tok.decode(ids, false)).isEqualTo("<s>" + text);
                }
                assertThat(tok.decode(new long[]{2})).isEqualTo("</s>");
                // ChatML's tokens at the top of the vocabulary, read as themselves in a text and not added
                assertThat(tok.encode("<|im_start|>user\nhi<|im_end|>", false, false).getIds())
                        .startsWith(vocab - 2).endsWith(vocab - 1);
                assertThat(tok.decode(new long[]{vocab - 2, vocab - 1}, true)).isEmpty();
                if (vocab >= 4096) {
                    long[] ids = tok.encode("the butterfly", false, false).getIds();
                    assertThat(ids.length).as("merges compress common words").isLessThan(6);
                }
                // every id decodes
                long[] all = java.util.stream.LongStream.range(0, vocab).toArray();
                assertThat(tok.decode(all, true)).isNotEmpty();
            }
        }
    }

    @Test
    void gpt2TokenizerUsesEndOfTextAndNoBos() throws Exception {
        ModelConfig c = new ModelConfig(Architecture.GPT2, 1, 16, 2, 2, 32, 1000, 64, 1e-5, 0, true, -1, -1);
        ModelGenerator.generate(c, 5, tmp);
        try (HuggingFaceTokenizer tok = HuggingFaceTokenizer.newInstance(tmp.resolve("tokenizer.json"), OPTIONS)) {
            assertVocab(tmp.resolve("tokenizer.json"), 1000);
            for (String text : TEXTS) {
                Encoding e = tok.encode(text);
                assertThat(java.util.Arrays.stream(e.getIds())).allMatch(id -> id >= 0 && id < 999);
                assertThat(tok.decode(e.getIds(), true)).isEqualTo(text);
            }
            assertThat(tok.decode(new long[]{999}, false)).isEqualTo("<|endoftext|>");
            assertThat(tok.encode("a<|endoftext|>").getIds()).contains(999L);
        }
    }

    private static void assertVocab(Path file, int vocab) throws Exception {
        tools.jackson.databind.JsonNode doc = tools.jackson.databind.json.JsonMapper.builder().build()
                .readTree(java.nio.file.Files.readAllBytes(file));
        tools.jackson.databind.JsonNode v = doc.path("model").path("vocab");
        assertThat(v.size()).isEqualTo(vocab);
        java.util.Set<Integer> ids = new java.util.HashSet<>();
        v.properties().forEach(e -> ids.add(e.getValue().asInt()));
        assertThat(ids).hasSize(vocab);
        assertThat(java.util.Collections.max(ids)).isEqualTo(vocab - 1);
        assertThat(java.util.Collections.min(ids)).isZero();
        assertThat(doc.path("model").path("merges").size()).isEqualTo(vocab - 256 - doc.path("added_tokens").size());
    }
}
