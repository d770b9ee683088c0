package io.butterfly.common.model.generate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.Architecture;
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
        ModelConfig tiny = new ModelConfig(Architecture.LLAMA, 1, 16, 2, 2, 32, 257, 16, 1e-5, 10000.0, false, 1, 2);
        assertThatThrownBy(() -> ModelGenerator.generate(tiny, 1, tmp))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("vocab size 257");
        assertThat(tmp.resolve("model.safetensors")).doesNotExist();
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
