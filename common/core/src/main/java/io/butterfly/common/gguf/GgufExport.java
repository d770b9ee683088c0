package io.butterfly.common.gguf;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.model.TokenizerConfig;
import io.butterfly.common.quant.GgmlQuants;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.common.safetensors.FloatWidening;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.TensorInfo;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Writes a Llama-family Hugging Face model directory (config, safetensors, a byte-level BPE tokenizer.json) as a GGUF
 * file the way llama.cpp's converter and {@code llama-quantize} do: llama.cpp's tensor names and metadata keys, the
 * query and key rows permuted for its rotary layout, matrices in the types a {@link WeightQuantization} gives
 * (float32 when none), vectors in float32. The tests and tools make the GGUF files Butterfly and llama.cpp load with
 * it; nothing is downloaded.
 */
public final class GgufExport {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private GgufExport() {
    }

    /** Writes {@code modelDir} to {@code out}, its matrices quantized as {@code quantization} says (null: float32). */
    public static void write(Path modelDir, Path out, WeightQuantization quantization) throws IOException {
        ModelConfig c = ModelConfig.read(modelDir.resolve("config.json"));
        if (c.architecture() != Architecture.LLAMA) {
            throw new IllegalArgumentException("only Llama-family models are written to GGUF");
        }
        if (c.experts() != null || c.qkNorm()) {
            throw new IllegalArgumentException("only dense Llama-family models without q/k norms are written to GGUF;"
                    + " this is a " + (c.experts() != null ? c.experts().kind().modelType() : "qwen3") + " model");
        }
        List<SafetensorsFile> files = new ArrayList<>();
        try (Stream<Path> list = Files.list(modelDir)) {
            for (Path p : list.filter(p -> p.getFileName().toString().endsWith(".safetensors")).sorted().toList()) {
                files.add(SafetensorsFile.open(p));
            }
        }
        try {
            GgufWriter w = new GgufWriter();
            metadata(c, modelDir, quantization).forEach(w::put);
            GgufRopeFreqs.write(c, w); // first, as llama.cpp's converter writes it
            Map<String, SafetensorsFile> byName = new LinkedHashMap<>();
            for (SafetensorsFile f : files) {
                f.tensors().keySet().forEach(n -> byName.putIfAbsent(n, f));
            }
            for (Map.Entry<String, SafetensorsFile> e : byName.entrySet()) {
                String hf = e.getKey();
                if (hf.equals("lm_head.weight") && c.tieWordEmbeddings()) {
                    continue;
                }
                String name = GgufLlama.ggufName(hf).orElseThrow(
                        () -> new IllegalArgumentException("tensor '" + hf + "' has no GGUF name"));
                TensorInfo info = e.getValue().info(hf);
                long[] shape = info.shape();
                GgmlType type = shape.length == 2 && quantization != null
                        ? quantization.typeOf(hf, shape, c).orElse(GgmlType.F32) : GgmlType.F32;
                long[] dims = new long[shape.length];
                for (int i = 0; i < shape.length; i++) {
                    dims[i] = shape[shape.length - 1 - i];
                }
                int heads = GgufLlama.permutedHeads("llama", hf, c);
                w.tensor(name, type, dims, o -> rows(e.getValue(), info, type, heads, o));
            }
            w.write(out);
        } finally {
            for (SafetensorsFile f : files) {
                f.close();
            }
        }
    }

    private static Map<String, GgufValue> metadata(ModelConfig c, Path dir, WeightQuantization q) throws IOException {
        JsonNode tokenizer = JSON.readTree(dir.resolve("tokenizer.json").toFile());
        return metadata(c, dir.getFileName().toString(), tokenizer, TokenizerConfig.read(dir).chatTemplate(), q);
    }

    /**
     * The metadata llama.cpp's converter writes for a Llama model: its hyper-parameters, {@code tokenizer.json}'s
     * vocabulary and the chat template (null: none); {@code q} names the file type (null: float32).
     */
    public static Map<String, GgufValue> metadata(ModelConfig c, String name, JsonNode tokenizer, String chatTemplate,
                                                  WeightQuantization q) {
        Map<String, GgufValue> m = new LinkedHashMap<>();
        m.put("general.architecture", GgufValue.string("llama"));
        m.put("general.name", GgufValue.string(name));
        m.put("general.file_type", GgufValue.uint32(q == null ? 0 : switch (q) {
            case Q8 -> 7;
            case Q4 -> 2;
            case Q4_K -> 15;
        }));
        m.put("llama.context_length", GgufValue.uint32(c.maxPositions()));
        m.put("llama.embedding_length", GgufValue.uint32(c.hiddenSize()));
        m.put("llama.block_count", GgufValue.uint32(c.numLayers()));
        m.put("llama.feed_forward_length", GgufValue.uint32(c.intermediateSize()));
        m.put("llama.attention.head_count", GgufValue.uint32(c.numHeads()));
        m.put("llama.attention.head_count_kv", GgufValue.uint32(c.numKvHeads()));
        m.put("llama.attention.layer_norm_rms_epsilon", GgufValue.float32(c.normEps()));
        m.put("llama.rope.freq_base", GgufValue.float32(c.ropeTheta()));
        m.put("llama.rope.dimension_count", GgufValue.uint32(c.headDim()));
        if (c.ropeScaling() != null && RopeScaling.LINEAR.equals(c.ropeScaling().type())) {
            m.put("llama.rope.scaling.type", GgufValue.string("linear"));
            m.put("llama.rope.scaling.factor", GgufValue.float32(c.ropeScaling().factor()));
        }
        m.put("llama.vocab_size", GgufValue.uint32(c.vocabSize()));
        m.putAll(GgufTokenizer.toGguf(tokenizer, c.bosTokenId(), c.eosTokenId()));
        if (chatTemplate != null) {
            m.put("tokenizer.chat_template", GgufValue.string(chatTemplate));
        }
        return m;
    }

    /** The tensor's rows in file order (permuted if {@code heads} > 0), each converted to {@code type}. */
    private static void rows(SafetensorsFile f, TensorInfo info, GgmlType type, int heads, OutputStream out)
            throws IOException {
        long[] shape = info.shape();
        long rows = shape.length == 1 ? 1 : shape[0];
        int cols = (int) shape[shape.length - 1];
        int element = TensorInfo.elementSize(info.dtype());
        ByteBuffer in = ByteBuffer.allocate(cols * element).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer row = ByteBuffer.allocate((int) type.rowBytes(cols)).order(ByteOrder.LITTLE_ENDIAN);
        for (long r = 0; r < rows; r++) {
            long source = heads > 0 ? GgufLlama.permutedRow(r, rows, heads) : r;
            in.clear();
            f.readRange(info.name(), source * cols * element, in);
            float[] values = FloatWidening.toFloat32(info.dtype(), in.flip());
            row.clear();
            GgmlQuants.quantize(type, values, 0, cols, row);
            out.write(row.array(), 0, row.position());
        }
    }
}
