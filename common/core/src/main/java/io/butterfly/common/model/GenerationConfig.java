package io.butterfly.common.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import tools.jackson.databind.JsonNode;

/**
 * What a model's {@code generation_config.json} says about ending a sequence. transformers' {@code generate()} takes
 * its settings from this file when the model has one, and from {@code config.json} only otherwise; instruct models
 * list end-of-turn tokens there that config.json lacks (Qwen2.5-Instruct's {@code <|endoftext|>} 151643 beside
 * config.json's 151645).
 */
public final class GenerationConfig {

    public static final String FILE = "generation_config.json";

    private GenerationConfig() {
    }

    /**
     * {@code config} with the end-of-sequence tokens of {@code file} when it exists and names any, else {@code config}
     * unchanged. (transformers, given the file without any, would never stop at an end-of-sequence token; keeping
     * config.json's is the safer reading of a file that only sets sampling defaults.)
     *
     * @throws IllegalArgumentException naming the file and field when it is not a JSON object or its
     *                                  {@code eos_token_id} is not a token id of the model or a list of them
     */
    public static ModelConfig applyTo(ModelConfig config, Path file) throws IOException {
        if (!Files.isRegularFile(file)) {
            return config;
        }
        List<Integer> eos = eosTokenIds(Files.readAllBytes(file));
        for (int id : eos) {
            if (id >= config.vocabSize()) {
                throw new IllegalArgumentException(FILE + ": eos_token_id " + id + " is outside the model's vocabulary of "
                        + config.vocabSize() + " tokens");
            }
        }
        return eos.isEmpty() ? config : config.withEndOfSequence(eos);
    }

    /** The file's {@code eos_token_id}: one id, a list of them, or none (absent or null). */
    public static List<Integer> eosTokenIds(byte[] json) {
        JsonNode root = JsonObjects.read(json, FILE);
        JsonNode v = root.get("eos_token_id");
        List<Integer> ids = new ArrayList<>();
        if (v == null || v.isNull()) {
            return ids;
        }
        if (v.isArray()) {
            v.forEach(id -> ids.add(tokenId(id)));
        } else {
            ids.add(tokenId(v));
        }
        return ids;
    }

    private static int tokenId(JsonNode id) {
        if (!id.isIntegralNumber() || !id.canConvertToInt() || id.asInt() < 0) {
            throw new IllegalArgumentException(FILE + ": eos_token_id must be a token id or a list of them, not " + id);
        }
        return id.asInt();
    }
}
