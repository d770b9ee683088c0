package io.butterfly.common.model.generate;

import io.butterfly.common.gguf.GgufExport;
import io.butterfly.common.gguf.GgufLlama;
import io.butterfly.common.gguf.GgufRopeFreqs;
import io.butterfly.common.gguf.GgufWriter;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.GgmlQuants;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.WeightQuantization;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes a seeded random Llama-family model straight into a GGUF file with quantized matrices (the types a {@link
 * WeightQuantization} gives, as {@code llama-quantize} would choose them), so that a model too large to exist in
 * float32 on this machine (an 8B is 32 GB) never has to: each row's values are drawn and quantized as the file is
 * written, so the memory taken is a few megabytes whatever the model's size.
 *
 * <p>Tensors in the order and under the names llama.cpp writes them, with the generator's initialisation scales
 * ({@link ModelGenerator}); the vocabulary is {@link TokenizerGenerator}'s byte-level BPE, with its ChatML chat
 * template. The query and key rows are drawn in the file's order: the values are random, so the rows llama.cpp would
 * permute are simply another draw. Llama 3.1's RoPE scaling is written as llama.cpp writes it, a {@code rope_freqs}
 * tensor ({@link GgufRopeFreqs}), and linear scaling as metadata.
 */
public final class GgufModelGenerator {

    private static final int CHUNK_BYTES = 1 << 20;

    private GgufModelGenerator() {
    }

    /** Writes {@code config}'s model, values drawn from {@code seed}, matrices as {@code quantization} says. */
    public static void generate(ModelConfig config, long seed, WeightQuantization quantization, Path file)
            throws IOException {
        if (config.architecture() != Architecture.LLAMA) {
            throw new IllegalArgumentException("only Llama-family models are written to GGUF");
        }
        ModelConfig c = config;
        JsonNode tokenizer = JsonMapper.builder().build().valueToTree(TokenizerGenerator.build(c));
        String name = file.getFileName().toString().replaceFirst("\\.gguf$", "");
        GgufWriter w = new GgufWriter();
        GgufExport.metadata(c, name, tokenizer, TokenizerGenerator.CHAT_TEMPLATE, quantization).forEach(w::put);
        GgufRopeFreqs.write(c, w);
        SplittableRandom random = new SplittableRandom(seed);
        for (Tensor t : tensors(c)) {
            GgmlType type = t.rows() == 1 ? GgmlType.F32
                    : quantization.typeOf(t.hfName(), new long[]{t.rows(), t.cols()}, c).orElse(GgmlType.F32);
            long[] dims = t.rows() == 1 ? new long[]{t.cols()} : new long[]{t.cols(), t.rows()};
            String ggufName = GgufLlama.ggufName(t.hfName()).orElseThrow();
            w.tensor(ggufName, type, dims, out -> draw(t, type, random, out));
        }
        Files.createDirectories(file.toAbsolutePath().getParent());
        w.write(file);
    }

    /** A tensor to draw: {@code rows} of {@code cols} values around {@code mean} with deviation {@code std}. */
    record Tensor(String hfName, long rows, int cols, double std, double mean) {
    }

    /** The model's tensors in file order, by transformers' names, with the generator's scales. */
    static List<Tensor> tensors(ModelConfig c) {
        int h = c.hiddenSize();
        int q = c.numHeads() * c.headDim();
        int kv = c.kvDim();
        int inter = c.intermediateSize();
        List<Tensor> t = new ArrayList<>();
        t.add(new Tensor("model.embed_tokens.weight", c.vocabSize(), h, 0.5, 0));
        for (int i = 0; i < c.numLayers(); i++) {
            String p = "model.layers." + i + ".";
            t.add(new Tensor(p + "input_layernorm.weight", 1, h, 0.1, 1));
            t.add(new Tensor(p + "self_attn.q_proj.weight", q, h, 0.25, 0));
            t.add(new Tensor(p + "self_attn.k_proj.weight", kv, h, 0.25, 0));
            t.add(new Tensor(p + "self_attn.v_proj.weight", kv, h, 0.15, 0));
            t.add(new Tensor(p + "self_attn.o_proj.weight", h, q, 0.1, 0));
            t.add(new Tensor(p + "post_attention_layernorm.weight", 1, h, 0.1, 1));
            t.add(new Tensor(p + "mlp.gate_proj.weight", inter, h, 0.15, 0));
            t.add(new Tensor(p + "mlp.up_proj.weight", inter, h, 0.15, 0));
            t.add(new Tensor(p + "mlp.down_proj.weight", h, inter, 0.1, 0));
        }
        t.add(new Tensor("model.norm.weight", 1, h, 0.1, 1));
        if (!c.tieWordEmbeddings()) {
            t.add(new Tensor("lm_head.weight", c.vocabSize(), h, 0.2, 0));
        }
        return t;
    }

    /** Draws the tensor row by row, each row quantized to {@code type}, written a megabyte at a time. */
    private static void draw(Tensor t, GgmlType type, SplittableRandom random, OutputStream out) throws IOException {
        int rowBytes = Math.toIntExact(type.rowBytes(t.cols()));
        int rowsPerChunk = Math.max(1, CHUNK_BYTES / rowBytes);
        ByteBuffer chunk = ByteBuffer.allocate(rowsPerChunk * rowBytes).order(ByteOrder.LITTLE_ENDIAN);
        float[] row = new float[t.cols()];
        for (long r = 0; r < t.rows(); r++) {
            for (int i = 0; i < row.length; i++) {
                row[i] = (float) (t.mean() + t.std() * random.nextGaussian());
            }
            GgmlQuants.quantize(type, row, 0, row.length, chunk);
            if (!chunk.hasRemaining() || r == t.rows() - 1) {
                out.write(chunk.array(), 0, chunk.position());
                chunk.clear();
            }
        }
    }
}
