package io.butterfly.common.model.generate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.TensorInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelGeneratorTest {

    static final ModelConfig LLAMA = new ModelConfig(Architecture.LLAMA, 2, 64, 4, 2, 96, 512, 128, 1e-5, 10000.0, false, 1, 2);
    static final ModelConfig GPT2 = new ModelConfig(Architecture.GPT2, 2, 64, 4, 4, 256, 400, 64, 1e-5, 0, true, -1, -1);

    @TempDir
    Path tmp;

    @Test
    void sameSeedGivesIdenticalBytesAndDifferentSeedDiffers() throws Exception {
        Path a = tmp.resolve("a");
        Path b = tmp.resolve("b");
        Path c = tmp.resolve("c");
        ModelGenerator.generate(LLAMA, 7, a);
        ModelGenerator.generate(LLAMA, 7, b);
        ModelGenerator.generate(LLAMA, 8, c);
        for (String f : List.of("config.json", "tokenizer.json", "model.safetensors")) {
            assertThat(Files.readAllBytes(a.resolve(f))).as(f).isEqualTo(Files.readAllBytes(b.resolve(f)));
        }
        assertThat(Files.readAllBytes(a.resolve("model.safetensors")))
                .isNotEqualTo(Files.readAllBytes(c.resolve("model.safetensors")));
        assertThat(ModelConfig.read(a.resolve("config.json"))).isEqualTo(LLAMA);
    }

    @Test
    void llamaTensorNamesAndShapes() throws Exception {
        ModelGenerator.generate(LLAMA, 1, tmp);
        Map<String, List<Long>> expected = new LinkedHashMap<>();
        expected.put("model.embed_tokens.weight", List.of(512L, 64L));
        for (int i = 0; i < 2; i++) {
            String p = "model.layers." + i + ".";
            expected.put(p + "input_layernorm.weight", List.of(64L));
            expected.put(p + "self_attn.q_proj.weight", List.of(64L, 64L));
            expected.put(p + "self_attn.k_proj.weight", List.of(32L, 64L));
            expected.put(p + "self_attn.v_proj.weight", List.of(32L, 64L));
            expected.put(p + "self_attn.o_proj.weight", List.of(64L, 64L));
            expected.put(p + "post_attention_layernorm.weight", List.of(64L));
            expected.put(p + "mlp.gate_proj.weight", List.of(96L, 64L));
            expected.put(p + "mlp.up_proj.weight", List.of(96L, 64L));
            expected.put(p + "mlp.down_proj.weight", List.of(64L, 96L));
        }
        expected.put("model.norm.weight", List.of(64L));
        expected.put("lm_head.weight", List.of(512L, 64L));
        assertShapes(tmp.resolve("model.safetensors"), expected, "F32", LLAMA.parameterCount());
    }

    @Test
    void gpt2TensorNamesAndShapesWithConv1dLayout() throws Exception {
        ModelGenerator.generate(GPT2, 1, tmp);
        Map<String, List<Long>> expected = new LinkedHashMap<>();
        expected.put("transformer.wte.weight", List.of(400L, 64L));
        expected.put("transformer.wpe.weight", List.of(64L, 64L));
        for (int i = 0; i < 2; i++) {
            String p = "transformer.h." + i + ".";
            expected.put(p + "ln_1.weight", List.of(64L));
            expected.put(p + "ln_1.bias", List.of(64L));
            expected.put(p + "attn.c_attn.weight", List.of(64L, 192L));
            expected.put(p + "attn.c_attn.bias", List.of(192L));
            expected.put(p + "attn.c_proj.weight", List.of(64L, 64L));
            expected.put(p + "attn.c_proj.bias", List.of(64L));
            expected.put(p + "ln_2.weight", List.of(64L));
            expected.put(p + "ln_2.bias", List.of(64L));
            expected.put(p + "mlp.c_fc.weight", List.of(64L, 256L));
            expected.put(p + "mlp.c_fc.bias", List.of(256L));
            expected.put(p + "mlp.c_proj.weight", List.of(256L, 64L));
            expected.put(p + "mlp.c_proj.bias", List.of(64L));
        }
        expected.put("transformer.ln_f.weight", List.of(64L));
        expected.put("transformer.ln_f.bias", List.of(64L));
        assertShapes(tmp.resolve("model.safetensors"), expected, "F32", GPT2.parameterCount());
    }

    @Test
    void halfPrecisionAndAttentionBias() throws Exception {
        ModelGenerator.generate(LLAMA, 3, tmp, ModelGenerator.Options.defaults().withDtype("bf16").withAttentionBias(true));
        try (SafetensorsFile f = SafetensorsFile.open(tmp.resolve("model.safetensors"))) {
            assertThat(f.tensors()).containsKeys("model.layers.0.self_attn.q_proj.bias", "model.layers.1.self_attn.v_proj.bias");
            assertThat(f.tensors().values()).allMatch(t -> t.dtype().equals("BF16"));
            float[] norm = f.readFloats("model.norm.weight");
            assertInRange(norm);
        }
        String config = Files.readString(tmp.resolve("config.json"));
        assertThat(config).contains("bfloat16");
        // q/k/v biases without an o_proj bias: Qwen2, as Hugging Face reads the config (Llama's attention_bias means all four).
        assertThat(config).contains("\"model_type\" : \"qwen2\"").contains("Qwen2ForCausalLM").doesNotContain("attention_bias");
        assertThat(ModelConfig.read(tmp.resolve("config.json")).architecture()).isEqualTo(Architecture.LLAMA);
        Path f16 = tmp.resolve("f16");
        ModelGenerator.generate(LLAMA, 3, f16, ModelGenerator.Options.defaults().withDtype("f16"));
        try (SafetensorsFile f = SafetensorsFile.open(f16.resolve("model.safetensors"))) {
            assertThat(f.info("model.norm.weight").dtype()).isEqualTo("F16");
            assertInRange(f.readFloats("model.norm.weight"));
        }
    }

    /**
     * The bytes the generator has always written (demo and benchmark models, every committed result measured on
     * them): pinned, so that a new option cannot change what the defaults write. The tokenizers changed once, on
     * purpose: ChatML's two special tokens took the last two ids (the last two merges before), and the chat template
     * and generation config came with them; the chat template again when it learned tools (assistant tool calls and tool
     * answers rendered as Qwen2.5's template renders them); the weights are what they were.
     */
    @Test
    void theDefaultsWriteWhatTheyAlwaysWrote() throws Exception {
        ModelGenerator.generate(LLAMA, 7, tmp.resolve("l"));
        ModelGenerator.generate(GPT2, 7, tmp.resolve("g"), ModelGenerator.Options.defaults().withDtype("bf16"));
        ModelGenerator.generate(LLAMA, 7, tmp.resolve("q"), ModelGenerator.Options.defaults().withDtype("f16").withAttentionBias(true));
        Map<String, String> expected = new LinkedHashMap<>();
        expected.put("l/config.json", "ea9805a43b014b0426cd707fde44a6080b1eb88c61b3d66b9cef906c3992fa7c");
        expected.put("l/tokenizer.json", "484bb57f6efc1405a16842080fbcbcc94cc87ae534734d966c8c938a9e7ba4fd");
        expected.put("l/tokenizer_config.json", "916e1c75cc9f933bc2b0742728fd2ffbadd1278ee4605427f404b7c204df9384");
        expected.put("l/generation_config.json", "9d191b39b796a94f9104abc3aca71d21d20d00b0fa9deba338a45052d01408e1");
        expected.put("l/model.safetensors", "d429f67508b8f109ba06f24e6ad41e3db89faa487d9064670ba46e67cc293f5a");
        expected.put("g/config.json", "c3af7355baef52d35d2c77031abbfeadf2313c363262b0b1f6c4e8d734604477");
        expected.put("g/tokenizer.json", "4a22f50783192e0b1fccbcc253f7c8c50348c01ee8e37361668b7c97f497466a");
        expected.put("g/model.safetensors", "67108a5244d32c7257107250498a937f8529b101c5a8e0d1eb91efc4a48ab894");
        expected.put("q/config.json", "db3c54e1a278e1590e28bedbf066a88a4fd69a5e48e3d296d8c8f2a5ed931d06");
        expected.put("q/model.safetensors", "755b9f7927c90ada728d6b778e3fe17f398c9d07f7bb2251b77a5a5794e2d347");
        for (Map.Entry<String, String> e : expected.entrySet()) {
            assertThat(Sha256.hexOfFile(tmp.resolve(e.getKey()))).as(e.getKey()).isEqualTo(e.getValue());
        }
        try (var files = Files.list(tmp.resolve("l"))) {
            assertThat(files.map(f -> f.getFileName().toString()))
                    .containsExactlyInAnyOrder("config.json", "tokenizer.json", "tokenizer_config.json",
                            "generation_config.json", "model.safetensors");
        }
    }

    @Test
    void perLayerFilesHoldTheOneFileModelsTensorsByPipelinePart() throws Exception {
        for (ModelConfig config : List.of(LLAMA, GPT2)) {
            Path whole = tmp.resolve(config.architecture().id() + "-whole");
            Path split = tmp.resolve(config.architecture().id() + "-split");
            ModelGenerator.generate(config, 5, whole);
            ModelGenerator.generate(config, 5, split, ModelGenerator.Options.defaults().withPerLayerFiles());

            Map<String, String> fileOf = tensorFiles(split);
            assertThat(split.resolve("model.safetensors")).doesNotExist();
            assertSameTensors(whole, split);
            boolean gpt2 = config.architecture() == Architecture.GPT2;
            assertThat(fileOf.get(gpt2 ? "transformer.wte.weight" : "model.embed_tokens.weight")).isEqualTo("embed.safetensors");
            assertThat(fileOf.get(gpt2 ? "transformer.h.1.mlp.c_proj.bias" : "model.layers.1.mlp.down_proj.weight"))
                    .isEqualTo("layer-00001.safetensors");
            assertThat(fileOf.get(gpt2 ? "transformer.ln_f.bias" : "model.norm.weight")).isEqualTo("head.safetensors");
            assertThat(fileOf).containsKeys(gpt2 ? "transformer.h.0.ln_1.weight" : "model.layers.0.input_layernorm.weight");
            assertThat(fileOf.values()).containsOnly("embed.safetensors", "layer-00000.safetensors",
                    "layer-00001.safetensors", "head.safetensors");
        }
    }

    @Test
    void huggingFaceShardsSplitTheTensorsInOrderAndIndexThem() throws Exception {
        Path whole = tmp.resolve("whole");
        Path sharded = tmp.resolve("sharded");
        ModelGenerator.generate(LLAMA, 5, whole);
        ModelGenerator.generate(LLAMA, 5, sharded, ModelGenerator.Options.defaults().withShards(3));

        Map<String, String> fileOf = tensorFiles(sharded);
        assertThat(new java.util.TreeSet<>(fileOf.values())).containsExactly("model-00001-of-00003.safetensors",
                "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors");
        assertSameTensors(whole, sharded);
        var index = tools.jackson.databind.json.JsonMapper.builder().build()
                .readTree(Files.readString(sharded.resolve("model.safetensors.index.json")));
        Map<String, String> indexed = new LinkedHashMap<>();
        index.get("weight_map").properties().forEach(e -> indexed.put(e.getKey(), e.getValue().asString()));
        assertThat(indexed).isEqualTo(fileOf);
        assertThat(index.get("metadata").get("total_size").asLong()).isEqualTo(LLAMA.parameterCount() * 4);
        assertThatThrownBy(() -> ModelGenerator.Options.defaults().withShards(2).withPerLayerFiles())
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ModelGenerator.Options.defaults().withShards(0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void allFourAttentionBiasesAreLlamasAttentionBias() throws Exception {
        ModelGenerator.generate(LLAMA, 3, tmp, ModelGenerator.Options.defaults().withAllAttentionBiases());
        try (SafetensorsFile f = SafetensorsFile.open(tmp.resolve("model.safetensors"))) {
            assertThat(f.tensors()).containsKeys("model.layers.0.self_attn.q_proj.bias", "model.layers.1.self_attn.o_proj.bias");
            assertThat(f.info("model.layers.1.self_attn.o_proj.bias").shape()).containsExactly(64);
        }
        String config = Files.readString(tmp.resolve("config.json"));
        assertThat(config).contains("\"attention_bias\" : true").contains("\"model_type\" : \"llama\"");
        assertThatThrownBy(() -> new ModelGenerator.Options("F32", false, true, true, true, 1, false))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("o_proj");
    }

    @Test
    void gpt2NamesWithoutTheTransformerPrefixAndAnUntiedHead() throws Exception {
        ModelConfig untied = new ModelConfig(Architecture.GPT2, 2, 64, 4, 4, 256, 400, 64, 1e-5, 0, false, -1, -1);
        ModelGenerator.generate(untied, 1, tmp, ModelGenerator.Options.defaults().withoutTransformerPrefix());
        try (SafetensorsFile f = SafetensorsFile.open(tmp.resolve("model.safetensors"))) {
            assertThat(f.tensors()).containsKeys("wte.weight", "wpe.weight", "h.1.attn.c_attn.weight", "ln_f.bias",
                    "lm_head.weight");
            assertThat(f.tensors().keySet()).noneMatch(name -> name.startsWith("transformer."));
        }
    }

    @Test
    void withoutATokenizerTheVocabularyMayBeSmallerThanTheByteSymbols() throws Exception {
        ModelConfig small = new ModelConfig(Architecture.LLAMA, 1, 16, 2, 2, 32, 100, 16, 1e-5, 10000.0, false, 1, 2);
        ModelGenerator.generate(small, 1, tmp, ModelGenerator.Options.defaults().withoutTokenizer());
        assertThat(tmp.resolve("tokenizer.json")).doesNotExist();
        assertThat(ModelConfig.read(tmp.resolve("config.json"))).isEqualTo(small);
        try (SafetensorsFile f = SafetensorsFile.open(tmp.resolve("model.safetensors"))) {
            assertThat(f.info("model.embed_tokens.weight").shape()).containsExactly(100, 16);
        }
    }

    @Test
    void halfConversionRoundsToNearest() {
        float[] samples = {0f, 1f, -2.5f, 0.1f, 65504f, 1e-6f, 6.1e-5f, 3.3e-3f, -0.333f};
        for (float s : samples) {
            float back = halfToFloat(ModelGenerator.toHalf(s));
            assertThat(Math.abs(back - s)).as("%s -> %s", s, back).isLessThanOrEqualTo(Math.max(Math.abs(s) / 1024f, 6e-8f));
        }
        assertThat(halfToFloat(ModelGenerator.toHalf(1e6f))).isInfinite();
    }

    @Test
    void tooSmallVocabIsRejected() {
        ModelConfig tiny = new ModelConfig(Architecture.LLAMA, 1, 16, 2, 2, 32, 259, 16, 1e-5, 10000.0, false, 1, 2);
        assertThatThrownBy(() -> ModelGenerator.generate(tiny, 1, tmp))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("vocab size 259");
        assertThat(tmp.resolve("model.safetensors")).doesNotExist();
    }

    /** Which file of {@code dir} holds each tensor. */
    private static Map<String, String> tensorFiles(Path dir) throws Exception {
        Map<String, String> fileOf = new LinkedHashMap<>();
        try (var files = Files.list(dir)) {
            for (Path p : files.filter(f -> f.toString().endsWith(".safetensors")).sorted().toList()) {
                try (SafetensorsFile f = SafetensorsFile.open(p)) {
                    for (String name : f.tensors().keySet()) {
                        assertThat(fileOf.put(name, p.getFileName().toString())).as(name + " in one file only").isNull();
                    }
                }
            }
        }
        return fileOf;
    }

    /** {@code split}'s files hold exactly the tensors of {@code whole}'s model.safetensors, byte for byte. */
    private static void assertSameTensors(Path whole, Path split) throws Exception {
        Map<String, String> fileOf = tensorFiles(split);
        try (SafetensorsFile w = SafetensorsFile.open(whole.resolve("model.safetensors"))) {
            assertThat(fileOf.keySet()).containsExactlyInAnyOrderElementsOf(w.tensors().keySet());
            for (String name : fileOf.keySet()) {
                try (SafetensorsFile f = SafetensorsFile.open(split.resolve(fileOf.get(name)))) {
                    assertThat(f.rawBytes(name)).as(name).isEqualTo(w.rawBytes(name));
                }
            }
        }
    }

    private static void assertShapes(Path file, Map<String, List<Long>> expected, String dtype, long params) throws Exception {
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            assertThat(f.tensors().keySet()).containsExactlyInAnyOrderElementsOf(expected.keySet());
            long total = 0;
            for (TensorInfo t : f.tensors().values()) {
                List<Long> shape = java.util.Arrays.stream(t.shape()).boxed().toList();
                assertThat(shape).as(t.name()).isEqualTo(expected.get(t.name()));
                assertThat(t.dtype()).isEqualTo(dtype);
                total += t.numElements();
            }
            assertThat(total).isEqualTo(params);
        }
    }

    private static void assertInRange(float[] norm) {
        for (float v : norm) {
            assertThat(v).isBetween(0.3f, 1.7f);
        }
    }

    static float halfToFloat(short h) {
        int s = (h >> 15) & 1;
        int e = (h >> 10) & 0x1F;
        int m = h & 0x3FF;
        double v;
        if (e == 0) {
            v = m * Math.pow(2, -24);
        } else if (e == 31) {
            v = m == 0 ? Double.POSITIVE_INFINITY : Double.NaN;
        } else {
            v = (1 + m / 1024.0) * Math.pow(2, e - 15);
        }
        return (float) (s == 1 ? -v : v);
    }
}
