package io.butterfly.common.model.generate;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes a seeded random Hugging Face model directory: {@code config.json}, {@code tokenizer.json} and
 * {@code model.safetensors} (written last, so its presence marks a complete directory).
 *
 * <p>Tensor names, shapes and initialisation scales follow Hugging Face layouts: Llama
 * ({@code model.embed_tokens.weight}, {@code model.layers.N.*}, {@code model.norm.weight}, {@code lm_head.weight}
 * unless tied) and GPT-2 ({@code transformer.wte}, {@code wpe}, {@code h.N.…}, {@code ln_f}, Conv1D weights stored {@code [in, out]}). Values
 * come from one {@link Random} seeded with {@code seed}, so the same config and seed give identical bytes.
 */
public final class ModelGenerator {

    /**
     * Generation options.
     *
     * @param dtype         tensor dtype: {@code F32}, {@code F16} or {@code BF16}
     * @param attentionBias Qwen2-style q/k/v projection biases (Llama only; the config then says qwen2)
     */
    public record Options(String dtype, boolean attentionBias) {

        public Options {
            dtype = normaliseDtype(dtype);
        }

        public static Options defaults() {
            return new Options("F32", false);
        }

        public Options withDtype(String d) {
            return new Options(d, attentionBias);
        }

        public Options withAttentionBias(boolean bias) {
            return new Options(dtype, bias);
        }
    }

    private ModelGenerator() {
    }

    /** Float32 weights, no attention biases. */
    public static void generate(ModelConfig config, long seed, Path dir) throws IOException {
        generate(config, seed, dir, Options.defaults());
    }

    /** Qwen2-style convenience: optional q/k/v biases, float32. */
    public static void generate(ModelConfig config, long seed, Path dir, boolean attentionBias) throws IOException {
        generate(config, seed, dir, Options.defaults().withAttentionBias(attentionBias));
    }

    public static void generate(ModelConfig config, long seed, Path dir, Options options) throws IOException {
        TokenizerGenerator.specialTokens(config); // validates the vocabulary before any heavy work
        Files.createDirectories(dir);
        TokenizerGenerator.write(config, dir.resolve("tokenizer.json"));
        writeConfig(config, options, dir.resolve("config.json"));
        SafetensorsWriter.write(dir.resolve("model.safetensors"), tensors(config, seed, options), Map.of("format", "pt"));
    }

    /** Maps {@code f32|float32|f16|float16|fp16|bf16|bfloat16} (any case) to a safetensors dtype. */
    public static String normaliseDtype(String dtype) {
        if (dtype == null) {
            return "F32";
        }
        return switch (dtype.toLowerCase(Locale.ROOT)) {
            case "f32", "fp32", "float32" -> "F32";
            case "f16", "fp16", "float16" -> "F16";
            case "bf16", "bfloat16" -> "BF16";
            default -> throw new IllegalArgumentException("unsupported dtype '" + dtype + "' (use f32, f16 or bf16)");
        };
    }

    private static void writeConfig(ModelConfig config, Options options, Path file) throws IOException {
        if (options.dtype().equals("F32") && !options.attentionBias()) {
            config.write(file);
            return;
        }
        Map<String, Object> hf = config.toHuggingFace();
        hf.put("torch_dtype", switch (options.dtype()) {
            case "F16" -> "float16";
            case "BF16" -> "bfloat16";
            default -> "float32";
        });
        if (options.attentionBias() && config.architecture() == Architecture.LLAMA) {
            // Biases on q/k/v only are Qwen2's layout. A Llama config's attention_bias would promise an o_proj bias
            // too, which Hugging Face would then initialise at random: the checkpoint would not mean what we run.
            hf.put("architectures", List.of("Qwen2ForCausalLM"));
            hf.put("model_type", "qwen2");
        }
        Files.write(file, JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build().writeValueAsBytes(hf));
    }

    /** The tensors, in file order. */
    static List<SafetensorsWriter.Entry> tensors(ModelConfig c, long seed, Options o) {
        List<SafetensorsWriter.Entry> entries = new ArrayList<>();
        TensorWriter w = new TensorWriter(entries, new Random(seed), o.dtype());
        int h = c.hiddenSize();
        if (c.architecture() == Architecture.GPT2) {
            String t = "transformer.";
            int inner = c.intermediateSize();
            w.matrix(t + "wte.weight", c.vocabSize(), h, 0.3);
            w.matrix(t + "wpe.weight", c.maxPositions(), h, 0.1);
            for (int i = 0; i < c.numLayers(); i++) {
                String p = t + "h." + i + ".";
                w.norm(p + "ln_1.weight", h);
                w.vector(p + "ln_1.bias", h, 0.05);
                w.matrix(p + "attn.c_attn.weight", h, 3 * h, 0.15);
                w.vector(p + "attn.c_attn.bias", 3 * h, 0.05);
                w.matrix(p + "attn.c_proj.weight", h, h, 0.1);
                w.vector(p + "attn.c_proj.bias", h, 0.05);
                w.norm(p + "ln_2.weight", h);
                w.vector(p + "ln_2.bias", h, 0.05);
                w.matrix(p + "mlp.c_fc.weight", h, inner, 0.12);
                w.vector(p + "mlp.c_fc.bias", inner, 0.05);
                w.matrix(p + "mlp.c_proj.weight", inner, h, 0.08);
                w.vector(p + "mlp.c_proj.bias", h, 0.05);
            }
            w.norm(t + "ln_f.weight", h);
            w.vector(t + "ln_f.bias", h, 0.05);
            if (!c.tieWordEmbeddings()) {
                w.matrix("lm_head.weight", c.vocabSize(), h, 0.2);
            }
        } else {
            int q = c.numHeads() * c.headDim();
            int kv = c.kvDim();
            int inter = c.intermediateSize();
            w.matrix("model.embed_tokens.weight", c.vocabSize(), h, 0.5);
            for (int i = 0; i < c.numLayers(); i++) {
                String p = "model.layers." + i + ".";
                w.norm(p + "input_layernorm.weight", h);
                w.matrix(p + "self_attn.q_proj.weight", q, h, 0.25);
                w.matrix(p + "self_attn.k_proj.weight", kv, h, 0.25);
                w.matrix(p + "self_attn.v_proj.weight", kv, h, 0.15);
                if (o.attentionBias()) {
                    w.vector(p + "self_attn.q_proj.bias", q, 0.1);
                    w.vector(p + "self_attn.k_proj.bias", kv, 0.1);
                    w.vector(p + "self_attn.v_proj.bias", kv, 0.1);
                }
                w.matrix(p + "self_attn.o_proj.weight", h, q, 0.1);
                w.norm(p + "post_attention_layernorm.weight", h);
                w.matrix(p + "mlp.gate_proj.weight", inter, h, 0.15);
                w.matrix(p + "mlp.up_proj.weight", inter, h, 0.15);
                w.matrix(p + "mlp.down_proj.weight", h, inter, 0.1);
            }
            w.norm("model.norm.weight", h);
            if (!c.tieWordEmbeddings()) {
                w.matrix("lm_head.weight", c.vocabSize(), h, 0.2);
            }
        }
        return entries;
    }

    /** Appends Gaussian tensors in one dtype, straight into little-endian buffers. */
    private record TensorWriter(List<SafetensorsWriter.Entry> entries, Random rnd, String dtype) {

        void matrix(String name, int rows, int cols, double std) {
            add(name, new long[]{rows, cols}, Math.multiplyExact(rows, cols), std, 0);
        }

        void vector(String name, int n, double std) {
            add(name, new long[]{n}, n, std, 0);
        }

        /** Norm weights around 1. */
        void norm(String name, int n) {
            add(name, new long[]{n}, n, 0.1, 1);
        }

        private void add(String name, long[] shape, int n, double std, double mean) {
            boolean f32 = dtype.equals("F32");
            ByteBuffer b = ByteBuffer.allocate(Math.multiplyExact(n, f32 ? 4 : 2)).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < n; i++) {
                float v = (float) (mean + std * rnd.nextGaussian());
                switch (dtype) {
                    case "F32" -> b.putFloat(v);
                    case "F16" -> b.putShort(toHalf(v));
                    default -> b.putShort(toBf16(v));
                }
            }
            entries.add(new SafetensorsWriter.Entry(name, dtype, shape, b.flip()));
        }
    }

    /** Round-to-nearest-even bfloat16. */
    static short toBf16(float f) {
        int bits = Float.floatToIntBits(f);
        int rounding = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    /** IEEE binary16, round-to-nearest-even (subnormals kept, overflow to infinity). */
    static short toHalf(float f) {
        int bits = Float.floatToIntBits(f);
        int sign = (bits >>> 16) & 0x8000;
        int abs = bits & 0x7FFFFFFF;
        if (abs >= 0x7F800000) { // inf or NaN
            return (short) (sign | 0x7C00 | (abs > 0x7F800000 ? 0x200 : 0));
        }
        if (abs >= 0x477FF000) { // rounds to >= 65520: infinity
            return (short) (sign | 0x7C00);
        }
        if (abs < 0x38800000) { // below the smallest normal half (2^-14): subnormal or zero
            if (abs < 0x33000000) { // below half the smallest subnormal (2^-25)
                return (short) sign;
            }
            int exp = abs >>> 23;
            int mant = (abs & 0x7FFFFF) | 0x800000;
            int shift = 126 - exp; // 14 + 13 - (exp - 127) ... bits to drop
            int half = mant >>> shift;
            int rem = mant & ((1 << shift) - 1);
            int mid = 1 << (shift - 1);
            if (rem > mid || (rem == mid && (half & 1) != 0)) {
                half++;
            }
            return (short) (sign | half);
        }
        int rounded = abs + 0xFFF + ((abs >>> 13) & 1);
        return (short) (sign | ((rounded - 0x38000000) >>> 13));
    }
}
