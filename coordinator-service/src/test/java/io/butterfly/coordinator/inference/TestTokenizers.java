package io.butterfly.coordinator.inference;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.TokenizerGenerator;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/** The byte-level BPE tokenizer a generated model ships, loaded as the coordinator loads a served model's. */
public final class TestTokenizers {

    private TestTokenizers() {
    }

    public static HuggingFaceTokenizer generated(ModelConfig config, Path dir) throws IOException {
        Path file = dir.resolve("tokenizer.json");
        TokenizerGenerator.write(config, file);
        return HuggingFaceTokenizer.newInstance(file, Map.of("addSpecialTokens", "true", "truncation", "false",
                "padding", "false"));
    }
}
