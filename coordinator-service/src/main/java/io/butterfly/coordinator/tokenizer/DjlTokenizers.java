package io.butterfly.coordinator.tokenizer;

import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import ai.djl.huggingface.tokenizers.jni.LibUtils;
import io.butterfly.coordinator.model.Tokenizer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/** Tokenizers read by Hugging Face's tokenizers library (through DJL's binding, its native library in the jar). */
public final class DjlTokenizers implements Tokenizer.Loader {

    private static final ObjectMapper JSON = JsonMapper.builder().build();

    @Override
    public void preload() {
        LibUtils.checkStatus();
    }

    /** Prompts are tokenized exactly as the file says: its own special-token rules, no truncation, no padding. */
    @Override
    public Tokenizer open(Path tokenizerJson) throws IOException {
        TokenBytes bytes = TokenBytes.of(JSON.readTree(tokenizerJson.toFile()));
        return new Opened(HuggingFaceTokenizer.newInstance(tokenizerJson,
                Map.of("addSpecialTokens", "true", "truncation", "false", "padding", "false")), bytes);
    }

    private record Opened(HuggingFaceTokenizer tokenizer, TokenBytes bytes) implements Tokenizer {

        @Override
        public long[] encode(String text, boolean addSpecialTokens) {
            return tokenizer.encode(text, addSpecialTokens, false).getIds();
        }

        @Override
        public String decode(long[] ids) {
            return tokenizer.decode(ids, true);
        }

        @Override
        public byte[] tokenBytes(long id) {
            return bytes.of(id);
        }

        @Override
        public void close() {
            tokenizer.close();
        }
    }
}
