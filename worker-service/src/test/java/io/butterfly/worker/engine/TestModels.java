package io.butterfly.worker.engine;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.SafetensorsWriter;
import io.butterfly.common.safetensors.TensorInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes small seeded random checkpoints with Hugging Face tensor names (test fixture), and splits them
 * into per-layer shard files the way the registry does (names kept).
 */
final class TestModels {

    /** How to write a checkpoint beyond its config. */
    record Options(boolean attentionBias, boolean outputBias, String dtype, boolean transformerPrefix, boolean untiedHead) {

        static Options plain() {
            return new Options(false, false, "F32", true, false);
        }

        Options withAttentionBias() {
            return new Options(true, outputBias, dtype, transformerPrefix, untiedHead);
        }

        Options withAllBiases() {
            return new Options(true, true, dtype, transformerPrefix, untiedHead);
        }

        Options withDtype(String d) {
            return new Options(attentionBias, outputBias, d, transformerPrefix, untiedHead);
        }

        Options withoutPrefix() {
            return new Options(attentionBias, outputBias, dtype, false, untiedHead);
        }

        Options withUntiedHead() {
            return new Options(attentionBias, outputBias, dtype, transformerPrefix, true);
        }
    }

    private TestModels() {
    }

    /** Llama with grouped-query attention: 4 heads sharing 2 kv heads, untied head. */
    static ModelConfig llamaGqa() {
        return new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 96, 128, 160, 1e-5, 10000.0, false, 1, 2);
    }

    /**
     * {@link #llamaGqa()} with scaled rotary frequencies. With head dim 16 and theta 10^4 the wavelengths run from 6
     * to 2*10^4 positions; llama3 scaling over an original context of 64 (bands at 16 and 64) keeps one
     * frequency, interpolates two and divides five.
     */
    static ModelConfig llamaGqa(RopeScaling scaling) {
        ModelConfig c = llamaGqa();
        return new ModelConfig(c.architecture(), c.numLayers(), c.hiddenSize(), c.numHeads(), c.numKvHeads(),
                c.intermediateSize(), c.vocabSize(), c.maxPositions(), c.normEps(), c.ropeTheta(), c.tieWordEmbeddings(),
                c.bosTokenId(), c.eosTokenId(), scaling, c.moreEosTokenIds());
    }

    /** Qwen2-style Llama (q/k/v biases), one kv head per two query heads, tied embeddings. */
    static ModelConfig llamaTied() {
        return new ModelConfig(Architecture.LLAMA, 4, 48, 4, 2, 80, 120, 64, 1e-6, 500.0, true, 1, 2);
    }

    static ModelConfig gpt2() {
        return new ModelConfig(Architecture.GPT2, 4, 64, 4, 4, 256, 128, 64, 1e-5, 0, true, -1, -1);
    }

    /** Writes config.json and model.safetensors into {@code dir}; returns {@code dir}. */
    static Path write(ModelConfig c, Options o, long seed, Path dir) throws IOException {
        Files.createDirectories(dir);
        Random rnd = new Random(seed);
        List<SafetensorsWriter.Entry> entries = new ArrayList<>();
        Writer w = new Writer(entries, rnd, o.dtype());
        int h = c.hiddenSize();
        if (c.architecture() == Architecture.GPT2) {
            String t = o.transformerPrefix() ? "transformer." : "";
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
            if (o.untiedHead()) {
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
                if (o.outputBias()) {
                    w.vector(p + "self_attn.o_proj.bias", h, 0.05);
                }
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
        c.write(dir.resolve("config.json"));
        SafetensorsWriter.write(dir.resolve("model.safetensors"), entries, Map.of("format", "pt"));
        return dir;
    }

    /**
     * Splits model.safetensors into {@code embed.safetensors}, {@code layer-N.safetensors} and
     * {@code head.safetensors} (names and bytes unchanged).
     */
    static void writeShards(Path modelDir, Path outDir) throws IOException {
        Files.createDirectories(outDir);
        Pattern layer = Pattern.compile("(?:^|\\.)(?:layers|h)\\.(\\d+)\\.");
        Map<String, List<SafetensorsWriter.Entry>> groups = new LinkedHashMap<>();
        try (SafetensorsFile f = SafetensorsFile.open(modelDir.resolve("model.safetensors"))) {
            for (TensorInfo t : f.tensors().values()) {
                Matcher m = layer.matcher(t.name());
                String group;
                if (m.find()) {
                    group = "layer-" + m.group(1);
                } else if (t.name().contains("embed_tokens") || t.name().contains("wte") || t.name().contains("wpe")) {
                    group = "embed";
                } else {
                    group = "head";
                }
                groups.computeIfAbsent(group, g -> new ArrayList<>())
                        .add(new SafetensorsWriter.Entry(t.name(), t.dtype(), t.shape(), f.rawBytes(t.name())));
            }
        }
        for (Map.Entry<String, List<SafetensorsWriter.Entry>> g : groups.entrySet()) {
            SafetensorsWriter.write(outDir.resolve(g.getKey() + ".safetensors"), g.getValue(), Map.of());
        }
    }

    /** The shard files a stage needs (the embedding file too when the head is tied to it). */
    static List<Path> shardsFor(PartitionSpec spec, Path shardDir) {
        List<Path> files = new ArrayList<>();
        boolean tiedHead = spec.hasHead() && !headHasLmHead(shardDir);
        if (spec.hasEmbedding() || tiedHead) {
            files.add(shardDir.resolve("embed.safetensors"));
        }
        for (int i = spec.layerStart(); i < spec.layerEnd(); i++) {
            files.add(shardDir.resolve("layer-" + i + ".safetensors"));
        }
        if (spec.hasHead()) {
            files.add(shardDir.resolve("head.safetensors"));
        }
        return files;
    }

    private static boolean headHasLmHead(Path shardDir) {
        try (SafetensorsFile f = SafetensorsFile.open(shardDir.resolve("head.safetensors"))) {
            return f.tensors().containsKey("lm_head.weight");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** Appends random tensors in a given dtype. */
    private record Writer(List<SafetensorsWriter.Entry> entries, Random rnd, String dtype) {

        void matrix(String name, int rows, int cols, double std) {
            add(name, new long[]{rows, cols}, gaussian(rows * cols, std, 0));
        }

        void vector(String name, int n, double std) {
            add(name, new long[]{n}, gaussian(n, std, 0));
        }

        /** Norm weights around 1. */
        void norm(String name, int n) {
            add(name, new long[]{n}, gaussian(n, 0.1, 1));
        }

        private float[] gaussian(int n, double std, double mean) {
            float[] v = new float[n];
            for (int i = 0; i < n; i++) {
                v[i] = (float) (mean + std * rnd.nextGaussian());
            }
            return v;
        }

        private void add(String name, long[] shape, float[] values) {
            switch (dtype) {
                case "F32" -> entries.add(SafetensorsWriter.Entry.float32(name, shape, values));
                case "F16", "BF16" -> {
                    ByteBuffer b = ByteBuffer.allocate(values.length * 2).order(ByteOrder.LITTLE_ENDIAN);
                    for (float v : values) {
                        b.putShort(dtype.equals("F16") ? toHalf(v) : (short) (Float.floatToIntBits(v) >>> 16));
                    }
                    entries.add(new SafetensorsWriter.Entry(name, dtype, shape, b.flip()));
                }
                default -> throw new IllegalArgumentException(dtype);
            }
        }

        /** Float to IEEE binary16 by truncation (values here are small normals; tiny ones flush to zero). */
        private static short toHalf(float f) {
            int bits = Float.floatToIntBits(f);
            int sign = (bits >>> 16) & 0x8000;
            int exp = ((bits >>> 23) & 0xFF) - 127 + 15;
            if (exp <= 0) {
                return (short) sign;
            }
            if (exp >= 31) {
                return (short) (sign | 0x7BFF);
            }
            return (short) (sign | (exp << 10) | ((bits >>> 13) & 0x3FF));
        }
    }
}
