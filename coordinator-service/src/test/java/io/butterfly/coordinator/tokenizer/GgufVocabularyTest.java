package io.butterfly.coordinator.tokenizer;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.gguf.GgufExport;
import io.butterfly.common.gguf.GgufFile;
import io.butterfly.common.gguf.GgufTokenizer;
import io.butterfly.common.gguf.GgufValue;
import io.butterfly.common.gguf.GgufValueType;
import io.butterfly.common.gguf.GgufWriter;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.coordinator.model.Tokenizer;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.json.JsonMapper;

/**
 * GGUF vocabularies become tokenizer.json files that Hugging Face's tokenizers library (the coordinator's) reads and
 * tokenizes with as the model's own tokenizer does: the byte-level BPE of Llama 3, Qwen2 and the generated models
 * (checked against the original tokenizer.json), and llama's SentencePiece BPE (merges from scores, byte fallback,
 * the prefix space, BOS).
 */
class GgufVocabularyTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String SPACE = "\u2581";

    @TempDir
    Path tmp;

    private Tokenizer fromGguf(Path gguf) throws Exception {
        Path json = tmp.resolve(gguf.getFileName() + ".tokenizer.json");
        try (GgufFile f = GgufFile.open(gguf)) {
            Files.write(json, JSON.writeValueAsBytes(GgufTokenizer.toTokenizerJson(f)));
        }
        return new DjlTokenizers().open(json);
    }

    @Test
    void aByteLevelVocabularyTokenizesAsItsOriginal() throws Exception {
        ModelConfig config = new ModelConfig(Architecture.LLAMA, 1, 64, 4, 2, 96, 600, 64, 1e-5, 10000.0, false, 1, 2);
        Path dir = ModelFixtures.write(config, 3, tmp.resolve("model"));
        Path gguf = tmp.resolve("model.gguf");
        GgufExport.write(dir, gguf, null);
        try (Tokenizer original = new DjlTokenizers().open(dir.resolve("tokenizer.json"));
             Tokenizer converted = fromGguf(gguf)) {
            for (String text : List.of("The butterfly effect is", "  spaces,\ttabs\nand 1234 numbers!",
                    "ünïcödé — and emoji 🦋", "<|im_start|>user\nhi<|im_end|>")) {
                for (boolean special : new boolean[]{true, false}) {
                    long[] ids = original.encode(text, special);
                    assertThat(converted.encode(text, special)).as("%s (special %s)", text, special).isEqualTo(ids);
                    assertThat(converted.decode(ids)).isEqualTo(original.decode(ids));
                }
            }
        }
    }

    @Test
    void aSentencePieceVocabularyMergesByScoreFallsBackToBytesAndAddsBos() throws Exception {
        List<String> tokens = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        List<Double> scores = new ArrayList<>(List.of(0.0, 0.0, 0.0));
        List<Long> types = new ArrayList<>(List.of(2L, 3L, 3L));
        for (int b = 0; b < 256; b++) {
            tokens.add(String.format("<0x%02X>", b));
            scores.add(0.0);
            types.add(6L);
        }
        // Pieces with scores as SentencePiece gives them: longer, more frequent pieces score higher.
        String[][] pieces = {{SPACE, "-1"}, {"t", "-2"}, {"h", "-2"}, {"e", "-2"}, {"b", "-2"}, {"u", "-2"},
            {"r", "-2"}, {"f", "-2"}, {"l", "-2"}, {"y", "-2"}, {"i", "-2"}, {"s", "-2"}, {"T", "-2"},
            {SPACE + "T", "-3"}, {"he", "-4"}, {SPACE + "The", "-5"}, {"ut", "-4"}, {"ter", "-4"}, {"te", "-3"},
            {"fly", "-5"}, {"fl", "-4"}, {SPACE + "b", "-3"}, {SPACE + "but", "-6"}, {SPACE + "butter", "-7"},
            {SPACE + "butterfly", "-8"}, {SPACE + "i", "-3"}, {SPACE + "is", "-4"}, {"er", "-3"}, {"tter", "-5"}};
        for (String[] p : pieces) {
            tokens.add(p[0]);
            scores.add(Double.parseDouble(p[1]));
            types.add(1L);
        }
        Path gguf = tmp.resolve("spm.gguf");
        new GgufWriter()
                .put("general.architecture", GgufValue.string("llama"))
                .put("tokenizer.ggml.model", GgufValue.string("llama"))
                .put("tokenizer.ggml.tokens", GgufValue.array(GgufValueType.STRING, tokens))
                .put("tokenizer.ggml.scores", GgufValue.array(GgufValueType.FLOAT32, scores))
                .put("tokenizer.ggml.token_type", GgufValue.array(GgufValueType.INT32, types))
                .put("tokenizer.ggml.bos_token_id", GgufValue.uint32(1))
                .put("tokenizer.ggml.eos_token_id", GgufValue.uint32(2))
                .put("tokenizer.ggml.unknown_token_id", GgufValue.uint32(0))
                .write(gguf);
        try (Tokenizer t = fromGguf(gguf)) {
            long[] ids = t.encode("The butterfly is", true);
            List<String> pieces2 = new ArrayList<>();
            for (long id : ids) {
                pieces2.add(tokens.get((int) id));
            }
            assertThat(pieces2).containsExactly("<s>", SPACE + "The", SPACE + "butterfly", SPACE + "is");
            // A character outside the vocabulary: its UTF-8 bytes, and back
            long[] accented = t.encode("fé", false);
            List<String> bytes = new ArrayList<>();
            for (long id : accented) {
                bytes.add(tokens.get((int) id));
            }
            assertThat(bytes).containsExactly(SPACE, "f", "<0xC3>", "<0xA9>");
            assertThat(t.decode(t.encode("The butterfly is fé", true))).isEqualTo("The butterfly is fé");
        }
    }
}
