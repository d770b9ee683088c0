package io.butterfly.registry;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsWriter;
import io.butterfly.common.safetensors.TensorInfo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

/** Small Hugging Face style model directories written straight with SafetensorsWriter (random bytes, fixed seed). */
public final class TinyModels {

    private TinyModels() {
    }

    public static ModelConfig llama(boolean tied) {
        return new ModelConfig(Architecture.LLAMA, 3, 16, 4, 2, 32, 64, 32, 1e-5, 10000, tied, 1, 2);
    }

    public static ModelConfig gpt2() {
        return new ModelConfig(Architecture.GPT2, 2, 16, 4, 4, 64, 50, 24, 1e-5, 0, true, 0, 0);
    }

    /** The tensors of a model in Hugging Face naming (GPT-2 with the {@code transformer.} prefix). */
    public static List<SafetensorsWriter.Entry> tensors(ModelConfig c, String dtype, long seed) {
        Random rnd = new Random(seed);
        List<SafetensorsWriter.Entry> out = new ArrayList<>();
        long h = c.hiddenSize();
        long inter = c.intermediateSize();
        if (c.architecture() == Architecture.GPT2) {
            String p = "transformer.";
            out.add(entry(p + "wte.weight", dtype, rnd, c.vocabSize(), h));
            out.add(entry(p + "wpe.weight", dtype, rnd, c.maxPositions(), h));
            for (int i = 0; i < c.numLayers(); i++) {
                String l = p + "h." + i + ".";
                out.add(entry(l + "ln_1.weight", dtype, rnd, h));
                out.add(entry(l + "ln_1.bias", dtype, rnd, h));
                out.add(entry(l + "attn.c_attn.weight", dtype, rnd, h, 3 * h));
                out.add(entry(l + "attn.c_attn.bias", dtype, rnd, 3 * h));
                out.add(entry(l + "attn.c_proj.weight", dtype, rnd, h, h));
                out.add(entry(l + "attn.c_proj.bias", dtype, rnd, h));
                out.add(entry(l + "ln_2.weight", dtype, rnd, h));
                out.add(entry(l + "ln_2.bias", dtype, rnd, h));
                out.add(entry(l + "mlp.c_fc.weight", dtype, rnd, h, inter));
                out.add(entry(l + "mlp.c_fc.bias", dtype, rnd, inter));
                out.add(entry(l + "mlp.c_proj.weight", dtype, rnd, inter, h));
                out.add(entry(l + "mlp.c_proj.bias", dtype, rnd, h));
            }
            out.add(entry(p + "ln_f.weight", dtype, rnd, h));
            out.add(entry(p + "ln_f.bias", dtype, rnd, h));
            return out;
        }
        long kv = c.kvDim();
        out.add(entry("model.embed_tokens.weight", dtype, rnd, c.vocabSize(), h));
        for (int i = 0; i < c.numLayers(); i++) {
            String l = "model.layers." + i + ".";
            out.add(entry(l + "input_layernorm.weight", dtype, rnd, h));
            out.add(entry(l + "self_attn.q_proj.weight", dtype, rnd, h, h));
            out.add(entry(l + "self_attn.k_proj.weight", dtype, rnd, kv, h));
            out.add(entry(l + "self_attn.v_proj.weight", dtype, rnd, kv, h));
            out.add(entry(l + "self_attn.o_proj.weight", dtype, rnd, h, h));
            out.add(entry(l + "post_attention_layernorm.weight", dtype, rnd, h));
            out.add(entry(l + "mlp.gate_proj.weight", dtype, rnd, inter, h));
            out.add(entry(l + "mlp.up_proj.weight", dtype, rnd, inter, h));
            out.add(entry(l + "mlp.down_proj.weight", dtype, rnd, h, inter));
        }
        out.add(entry("model.norm.weight", dtype, rnd, h));
        if (!c.tieWordEmbeddings()) {
            out.add(entry("lm_head.weight", dtype, rnd, c.vocabSize(), h));
        }
        return out;
    }

    /** Writes config.json, tokenizer.json and the weights, split over {@code files} safetensors files. */
    public static List<SafetensorsWriter.Entry> write(Path dir, ModelConfig c, String dtype, int files, long seed)
            throws IOException {
        Files.createDirectories(dir);
        c.write(dir.resolve("config.json"));
        Files.writeString(dir.resolve("tokenizer.json"), "{\"version\":\"1.0\",\"model\":{\"type\":\"WordLevel\"}}");
        List<SafetensorsWriter.Entry> all = tensors(c, dtype, seed);
        if (files == 1) {
            SafetensorsWriter.write(dir.resolve("model.safetensors"), all, Map.of("format", "pt"));
        } else {
            int per = (all.size() + files - 1) / files;
            for (int f = 0; f < files; f++) {
                List<SafetensorsWriter.Entry> part = all.subList(f * per, Math.min(all.size(), (f + 1) * per));
                SafetensorsWriter.write(dir.resolve(String.format("model-%05d-of-%05d.safetensors", f + 1, files)),
                        part, Map.of("format", "pt"));
            }
        }
        return all;
    }

    private static SafetensorsWriter.Entry entry(String name, String dtype, Random rnd, long... shape) {
        long n = TensorInfo.elementSize(dtype);
        for (long d : shape) {
            n *= d;
        }
        byte[] bytes = new byte[(int) n];
        rnd.nextBytes(bytes);
        return new SafetensorsWriter.Entry(name, dtype, shape, ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN));
    }
}
