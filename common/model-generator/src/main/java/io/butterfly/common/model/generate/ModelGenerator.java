package io.butterfly.common.model.generate;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.GenerationConfig;
import io.butterfly.common.model.MixtureOfExperts;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.TokenizerConfig;
import io.butterfly.common.safetensors.SafetensorsWriter;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.function.DoubleSupplier;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes a seeded random Hugging Face model directory: {@code config.json}, {@code tokenizer.json},
 * {@code tokenizer_config.json} (a ChatML chat template), {@code generation_config.json} (the turn's end,
 * {@code <|im_end|>}, ends a sequence too) and {@code model.safetensors} (written last, so its presence marks a
 * complete directory), or the variants {@link Options} describes.
 *
 * <p>Tensor names, shapes and initialisation scales follow Hugging Face layouts: Llama
 * ({@code model.embed_tokens.weight}, {@code model.layers.N.*}, {@code model.norm.weight}, {@code lm_head.weight}
 * unless tied) and GPT-2 ({@code transformer.wte}, {@code wpe}, {@code h.N.…}, {@code ln_f}, Conv1D weights stored {@code [in, out]}). Values
 * come from one {@link Random} seeded with {@code seed}, so the same config and seed give identical bytes, whatever
 * the {@link Options#shards() files} they are spread over.
 */
public final class ModelGenerator {

    /** The weights file of a one-file model. */
    public static final String WEIGHTS_FILE = "model.safetensors";
    /** Where each tensor of a sharded model is (Hugging Face's index of its shards). */
    public static final String SHARD_INDEX_FILE = "model.safetensors.index.json";
    /** Per-layer layout: the token (and position) embeddings. */
    public static final String EMBED_FILE = "embed.safetensors";
    /** Per-layer layout: the final norm and the LM head. */
    public static final String HEAD_FILE = "head.safetensors";

    /**
     * Generation options. The defaults ({@link #defaults()}) are what {@code model generate} writes; the others make
     * the variants tests load: checkpoints other tools write, and the per-stage files the registry serves.
     *
     * @param dtype             tensor dtype: {@code F32}, {@code F16} or {@code BF16}
     * @param attentionBias     Qwen2-style q/k/v projection biases (Llama only; the config then says qwen2)
     * @param outputBias        an o_proj bias as well (Llama only, with {@code attentionBias}: Llama's
     *                          {@code attention_bias}, which puts a bias on all four projections)
     * @param transformerPrefix GPT-2 tensor names start with {@code transformer.}, as {@code GPT2LMHeadModel} saves
     *                          them; without it they are named as {@code GPT2Model} saves them
     * @param tokenizer         write {@code tokenizer.json}, {@code tokenizer_config.json} and
     *                          {@code generation_config.json}; without them the vocabulary may be smaller than the 256
     *                          byte symbols a byte-level tokenizer needs (weights-only test models)
     * @param shards            weights files: 1 writes {@value #WEIGHTS_FILE}; more write Hugging Face shards
     *                          {@code model-0000i-of-0000n.safetensors} (the tensors in order, split evenly by count)
     *                          and {@value #SHARD_INDEX_FILE}
     * @param perLayerFiles     one file per pipeline part instead, as the registry serves a model:
     *                          {@value #EMBED_FILE}, {@code layer-00000.safetensors}..., {@value #HEAD_FILE} (each
     *                          tensor once: a tied head's stage needs {@value #EMBED_FILE} too)
     * @param fastGaussians     draw the values with {@link SplittableRandom}'s ziggurat instead of {@link Random}'s
     *                          polar method: several times faster, for models of billions of parameters (other bytes
     *                          than the small models have always had, so those keep {@link Random})
     */
    public record Options(String dtype, boolean attentionBias, boolean outputBias, boolean transformerPrefix,
                          boolean tokenizer, int shards, boolean perLayerFiles, boolean fastGaussians) {

        public Options(String dtype, boolean attentionBias, boolean outputBias, boolean transformerPrefix,
                       boolean tokenizer, int shards, boolean perLayerFiles) {
            this(dtype, attentionBias, outputBias, transformerPrefix, tokenizer, shards, perLayerFiles, false);
        }

        public Options {
            dtype = normaliseDtype(dtype);
            if (outputBias && !attentionBias) {
                throw new IllegalArgumentException("an o_proj bias without q/k/v biases is no Hugging Face layout");
            }
            if (shards < 1) {
                throw new IllegalArgumentException("shards must be at least 1, got " + shards);
            }
            if (perLayerFiles && shards > 1) {
                throw new IllegalArgumentException("per-layer files and Hugging Face shards are two layouts: choose one");
            }
        }

        public static Options defaults() {
            return new Options("F32", false, false, true, true, 1, false);
        }

        public Options withDtype(String d) {
            return new Options(d, attentionBias, outputBias, transformerPrefix, tokenizer, shards, perLayerFiles, fastGaussians);
        }

        public Options withAttentionBias(boolean bias) {
            return new Options(dtype, bias, outputBias, transformerPrefix, tokenizer, shards, perLayerFiles, fastGaussians);
        }

        /** q/k/v and o_proj biases (Llama's {@code attention_bias}). */
        public Options withAllAttentionBiases() {
            return new Options(dtype, true, true, transformerPrefix, tokenizer, shards, perLayerFiles, fastGaussians);
        }

        public Options withoutTransformerPrefix() {
            return new Options(dtype, attentionBias, outputBias, false, tokenizer, shards, perLayerFiles, fastGaussians);
        }

        public Options withoutTokenizer() {
            return new Options(dtype, attentionBias, outputBias, transformerPrefix, false, shards, perLayerFiles, fastGaussians);
        }

        public Options withShards(int n) {
            return new Options(dtype, attentionBias, outputBias, transformerPrefix, tokenizer, n, perLayerFiles, fastGaussians);
        }

        public Options withPerLayerFiles() {
            return new Options(dtype, attentionBias, outputBias, transformerPrefix, tokenizer, shards, true, fastGaussians);
        }

        /** Values from the fast generator (see {@link #fastGaussians}). */
        public Options withFastGaussians() {
            return new Options(dtype, attentionBias, outputBias, transformerPrefix, tokenizer, shards, perLayerFiles, true);
        }
    }

    private static final Map<String, String> METADATA = Map.of("format", "pt");

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
        if (options.tokenizer()) {
            TokenizerGenerator.specialTokens(config); // validates the vocabulary before any heavy work
        }
        Files.createDirectories(dir);
        if (options.tokenizer()) {
            TokenizerGenerator.write(config, dir.resolve("tokenizer.json"));
            TokenizerGenerator.writeConfig(config, dir.resolve(TokenizerConfig.FILE));
            writeGenerationConfig(config, dir.resolve(GenerationConfig.FILE));
        }
        writeConfig(config, options, dir.resolve("config.json"));
        writeWeights(parts(config, seed, options), options, dir);
    }

    /**
     * {@code generation_config.json} as a chat model ships it: its end-of-sequence tokens and the chat template's end
     * of turn, so that an answer ends where the model closes its turn (as Qwen2.5-Instruct lists {@code <|im_end|>}).
     */
    private static void writeGenerationConfig(ModelConfig config, Path file) throws IOException {
        List<Integer> eos = new ArrayList<>();
        if (config.eosTokenId() >= 0) {
            eos.add(config.eosTokenId());
        }
        eos.addAll(config.moreEosTokenIds());
        eos.add(TokenizerGenerator.idOf(config, TokenizerGenerator.IM_END));
        Map<String, Object> doc = new LinkedHashMap<>();
        if (config.bosTokenId() >= 0) {
            doc.put("bos_token_id", config.bosTokenId());
        }
        doc.put("eos_token_id", eos);
        Files.write(file, JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build().writeValueAsBytes(doc));
    }

    /** The name of layer {@code layer}'s file in the per-layer layout. */
    public static String layerFile(int layer) {
        return String.format("layer-%05d.safetensors", layer);
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
        boolean plainLlama = config.architecture() == Architecture.LLAMA && config.experts() == null && !config.qkNorm();
        if (!plainLlama && config.architecture() == Architecture.LLAMA && options.attentionBias()) {
            MixtureOfExperts.Kind kind = config.experts() == null ? null : config.experts().kind();
            if (kind == MixtureOfExperts.Kind.QWEN2_MOE && !options.outputBias()) {
                // Qwen2-MoE has q/k/v biases whatever the options (its config says qkv_bias)
            } else if (config.qkNorm() && options.outputBias()) {
                hf.put("attention_bias", true); // Qwen3's: biases on q, k, v and o
            } else {
                throw new IllegalArgumentException("this model's config has no field for these attention biases");
            }
        } else if (options.outputBias() && config.architecture() == Architecture.LLAMA) {
            hf.put("attention_bias", true); // Llama's: biases on q, k, v and o
        } else if (options.attentionBias() && config.architecture() == Architecture.LLAMA) {
            // Biases on q/k/v only are Qwen2's layout. A Llama config's attention_bias would promise an o_proj bias
            // too, which Hugging Face would then initialise at random: the checkpoint would not mean what we run.
            hf.put("architectures", List.of("Qwen2ForCausalLM"));
            hf.put("model_type", "qwen2");
        }
        Files.write(file, JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build().writeValueAsBytes(hf));
    }

    /**
     * Writes the weights in the layout {@code options} asks for; the one-file layout's file last of all. Every tensor's
     * values are drawn as it is written, in file order, a chunk at a time: a model of any size is written in the same
     * memory, and the bytes are those of drawing every value in order from one generator.
     */
    private static void writeWeights(List<Part> parts, Options options, Path dir) throws IOException {
        if (options.perLayerFiles()) {
            for (Part p : parts) {
                SafetensorsWriter.writeStreamed(dir.resolve(p.file()), p.entries(), METADATA);
            }
            return;
        }
        List<SafetensorsWriter.StreamedEntry> all = parts.stream().flatMap(p -> p.entries().stream()).toList();
        int n = options.shards();
        if (n == 1) {
            SafetensorsWriter.writeStreamed(dir.resolve(WEIGHTS_FILE), all, METADATA);
            return;
        }
        int perShard = (all.size() + n - 1) / n;
        Map<String, String> weightMap = new LinkedHashMap<>();
        long totalBytes = 0;
        for (int i = 0; i < n; i++) {
            String file = String.format("model-%05d-of-%05d.safetensors", i + 1, n);
            List<SafetensorsWriter.StreamedEntry> shard = all.subList(Math.min(all.size(), i * perShard),
                    Math.min(all.size(), (i + 1) * perShard));
            for (SafetensorsWriter.StreamedEntry e : shard) {
                weightMap.put(e.name(), file);
                totalBytes += e.byteLength();
            }
            SafetensorsWriter.writeStreamed(dir.resolve(file), shard, METADATA);
        }
        Map<String, Object> index = new LinkedHashMap<>();
        index.put("metadata", Map.of("total_size", totalBytes));
        index.put("weight_map", weightMap);
        Files.write(dir.resolve(SHARD_INDEX_FILE),
                JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build().writeValueAsBytes(index));
    }

    /** The tensors of one file of the per-layer layout, in file order. */
    private record Part(String file, List<SafetensorsWriter.StreamedEntry> entries) {
    }

    /** The tensors, in file order, by the pipeline part they belong to (embedding, each layer, head). */
    private static List<Part> parts(ModelConfig c, long seed, Options o) {
        DoubleSupplier gaussian = o.fastGaussians() ? new SplittableRandom(seed)::nextGaussian : new Random(seed)::nextGaussian;
        TensorWriter w = new TensorWriter(new ArrayList<>(), gaussian, o.dtype());
        int h = c.hiddenSize();
        if (c.architecture() == Architecture.GPT2) {
            String t = o.transformerPrefix() ? "transformer." : "";
            int inner = c.intermediateSize();
            w.part(EMBED_FILE);
            w.matrix(t + "wte.weight", c.vocabSize(), h, 0.3);
            w.matrix(t + "wpe.weight", c.maxPositions(), h, 0.1);
            for (int i = 0; i < c.numLayers(); i++) {
                w.part(layerFile(i));
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
            w.part(HEAD_FILE);
            w.norm(t + "ln_f.weight", h);
            w.vector(t + "ln_f.bias", h, 0.05);
            if (!c.tieWordEmbeddings()) {
                w.matrix("lm_head.weight", c.vocabSize(), h, 0.2);
            }
        } else {
            int q = c.numHeads() * c.headDim();
            int kv = c.kvDim();
            int inter = c.intermediateSize();
            boolean qwen2Moe = c.experts() != null && c.experts().kind() == MixtureOfExperts.Kind.QWEN2_MOE;
            w.part(EMBED_FILE);
            w.matrix("model.embed_tokens.weight", c.vocabSize(), h, 0.5);
            for (int i = 0; i < c.numLayers(); i++) {
                w.part(layerFile(i));
                String p = "model.layers." + i + ".";
                w.norm(p + "input_layernorm.weight", h);
                w.matrix(p + "self_attn.q_proj.weight", q, h, 0.25);
                w.matrix(p + "self_attn.k_proj.weight", kv, h, 0.25);
                w.matrix(p + "self_attn.v_proj.weight", kv, h, 0.15);
                if (o.attentionBias() || qwen2Moe) {
                    w.vector(p + "self_attn.q_proj.bias", q, 0.1);
                    w.vector(p + "self_attn.k_proj.bias", kv, 0.1);
                    w.vector(p + "self_attn.v_proj.bias", kv, 0.1);
                }
                w.matrix(p + "self_attn.o_proj.weight", h, q, 0.1);
                if (o.outputBias()) {
                    w.vector(p + "self_attn.o_proj.bias", h, 0.05);
                }
                if (c.qkNorm()) {
                    w.norm(p + "self_attn.q_norm.weight", c.headDim());
                    w.norm(p + "self_attn.k_norm.weight", c.headDim());
                }
                w.norm(p + "post_attention_layernorm.weight", h);
                MixtureOfExperts moe = c.experts();
                if (moe != null && moe.sparse(i)) {
                    // A router wide enough that tokens spread over the experts, and clear of near ties between them.
                    w.matrix(moe.router(i), moe.experts(), h, 0.3);
                    for (int e = 0; e < moe.experts(); e++) {
                        w.mlp(moe.expert(i, e), moe.expertSize(), h);
                    }
                    if (moe.hasSharedExpert()) {
                        w.mlp(moe.sharedExpert(i), moe.sharedExpertSize(), h);
                        w.matrix(moe.sharedExpertGate(i), 1, h, 0.15);
                    }
                } else {
                    w.mlp(new String[]{p + "mlp.gate_proj.weight", p + "mlp.up_proj.weight", p + "mlp.down_proj.weight"},
                            inter, h);
                }
            }
            w.part(HEAD_FILE);
            w.norm("model.norm.weight", h);
            if (!c.tieWordEmbeddings()) {
                w.matrix("lm_head.weight", c.vocabSize(), h, 0.2);
            }
        }
        return w.parts();
    }

    /**
     * Appends Gaussian tensors in one dtype to the part begun last. Their values are drawn when the file is written
     * (the tensors in order, each once), through a buffer of {@value #CHUNK_VALUES} values.
     */
    private record TensorWriter(List<Part> parts, DoubleSupplier gaussian, String dtype) {

        private static final int CHUNK_VALUES = 1 << 16;

        void part(String file) {
            parts.add(new Part(file, new ArrayList<>()));
        }

        void matrix(String name, int rows, int cols, double std) {
            add(name, new long[]{rows, cols}, (long) rows * cols, std, 0);
        }

        /** A SiLU-gated MLP's gate, up and down weights. */
        void mlp(String[] gateUpDown, int inter, int h) {
            matrix(gateUpDown[0], inter, h, 0.15);
            matrix(gateUpDown[1], inter, h, 0.15);
            matrix(gateUpDown[2], h, inter, 0.1);
        }

        void vector(String name, int n, double std) {
            add(name, new long[]{n}, n, std, 0);
        }

        /** Norm weights around 1. */
        void norm(String name, int n) {
            add(name, new long[]{n}, n, 0.1, 1);
        }

        private void add(String name, long[] shape, long n, double std, double mean) {
            int size = dtype.equals("F32") ? 4 : 2;
            parts.get(parts.size() - 1).entries().add(new SafetensorsWriter.StreamedEntry(name, dtype, shape,
                    Math.multiplyExact(n, size), out -> draw(n, std, mean, out)));
        }

        private void draw(long n, double std, double mean, OutputStream out) throws IOException {
            ByteBuffer b = ByteBuffer.allocate(CHUNK_VALUES * 4).order(ByteOrder.LITTLE_ENDIAN);
            for (long done = 0; done < n; ) {
                int chunk = (int) Math.min(CHUNK_VALUES, n - done);
                b.clear();
                for (int i = 0; i < chunk; i++) {
                    float v = (float) (mean + std * gaussian.getAsDouble());
                    switch (dtype) {
                        case "F32" -> b.putFloat(v);
                        case "F16" -> b.putShort(toHalf(v));
                        default -> b.putShort(toBf16(v));
                    }
                }
                out.write(b.array(), 0, b.position());
                done += chunk;
            }
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
