package io.butterfly.coordinator.inference;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.TokenizerGenerator;
import java.io.IOException;
import java.nio.file.Path;

/** The byte-level BPE tokenizer a generated model ships. */
public final class TestTokenizers {

    private TestTokenizers() {
    }

    /** Writes it into {@code dir}; returns its tokenizer.json. */
    public static Path write(ModelConfig config, Path dir) throws IOException {
        Path file = dir.resolve("tokenizer.json");
        TokenizerGenerator.write(config, file);
        return file;
    }

    /** Writes it into {@code dir} and reads it with the tokenizers library, for tests that choose special tokens. */
    public static HuggingFaceTokenizer generated(ModelConfig config, Path dir) throws IOException {
        return HuggingFaceTokenizer.newInstance(write(config, dir));
    }
}
