package io.butterfly.registry.catalog;

import io.butterfly.common.gguf.GgufFile;
import io.butterfly.common.gguf.GgufLlama;
import io.butterfly.common.gguf.GgufRopeFreqs;
import io.butterfly.common.gguf.GgufTensor;
import io.butterfly.common.gguf.GgufTokenizer;
import io.butterfly.common.gguf.InvalidGgufException;
import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.QuantizedTensors;
import io.butterfly.common.safetensors.SafetensorsWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * Imports a GGUF file of a Llama-family model (Llama 2/3, Mistral, Qwen2) as it is: the hyper-parameters and the
 * vocabulary read from its metadata ({@code config.json}, {@code tokenizer.json}, {@code tokenizer_config.json} with
 * its chat template, BOS and EOS), and each tensor's bytes copied into the same per-stage shards a model directory
 * makes, under transformers' names: float types as they are, ggml blocks as {@code U8} rows with their type in the
 * shard's metadata ({@link QuantizedTensors}). The query and key rows llama.cpp permuted are put back in
 * transformers' order (whole rows move: blocks run along a row), so the math is the original model's.
 *
 * <p>A tensor of a type the workers do not compute, or that is not part of a Llama-family model, is refused here,
 * naming it, before anything is served.
 */
final class GgufImporter {

    private static final JsonMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();
    private static final int CHUNK_BYTES = 4 << 20;

    private final Clock clock;

    GgufImporter(Clock clock) {
        this.clock = clock;
    }

    Manifest importGguf(String modelId, Path file, Path outDir) throws IOException {
        GgufFile gguf;
        try {
            gguf = GgufFile.open(file);
        } catch (InvalidGgufException e) {
            throw ModelImporter.invalid("path", e.getMessage());
        }
        try (gguf) {
            ModelConfig config;
            Map<String, Object> tokenizer;
            try {
                config = GgufLlama.config(gguf);
                tokenizer = GgufTokenizer.toTokenizerJson(gguf);
            } catch (IllegalArgumentException e) { // InvalidGgufException included
                throw ModelImporter.invalid("path", e.getMessage());
            }
            String arch = gguf.string("general.architecture").orElseThrow();
            Map<String, GgufTensor> byHfName = tensors(gguf, config);
            Files.createDirectories(outDir);
            List<ManifestFile> files = new ArrayList<>();
            config.write(outDir.resolve(ModelImporter.CONFIG_FILE));
            files.add(ModelImporter.describe(outDir.resolve(ModelImporter.CONFIG_FILE), FileKind.CONFIG, null, "json"));
            Files.write(outDir.resolve(ModelImporter.TOKENIZER_FILE), JSON.writeValueAsBytes(tokenizer));
            files.add(ModelImporter.describe(outDir.resolve(ModelImporter.TOKENIZER_FILE), FileKind.TOKENIZER, null, "json"));
            Path tokenizerConfig = outDir.resolve(io.butterfly.common.model.TokenizerConfig.FILE);
            Files.write(tokenizerConfig, JSON.writeValueAsBytes(tokenizerConfig(gguf, config)));
            files.add(ModelImporter.describe(tokenizerConfig, FileKind.TOKENIZER_CONFIG, null, "json"));

            String embed = "model.embed_tokens.weight";
            files.add(shard(gguf, arch, config, byHfName, List.of(embed), outDir.resolve(ModelImporter.EMBED_FILE),
                    FileKind.EMBEDDING, null));
            for (int layer = 0; layer < config.numLayers(); layer++) {
                String prefix = "model.layers." + layer + ".";
                List<String> names = byHfName.keySet().stream().filter(n -> n.startsWith(prefix)).sorted().toList();
                files.add(shard(gguf, arch, config, byHfName, names,
                        outDir.resolve(ModelImporter.layerFileName(layer)), FileKind.LAYER, layer));
            }
            // With tied embeddings the head carries a copy of the token embedding, which the last stage projects with.
            List<String> head = config.tieWordEmbeddings() ? List.of("model.norm.weight", embed)
                    : List.of("model.norm.weight", "lm_head.weight");
            files.add(shard(gguf, arch, config, byHfName, head, outDir.resolve(ModelImporter.HEAD_FILE), FileKind.HEAD, null));

            Map<String, Long> typeElements = new TreeMap<>();
            long parameters = 0;
            for (GgufTensor t : byHfName.values()) {
                typeElements.merge(t.type().name(), t.numElements(), Long::sum);
                parameters += t.numElements();
            }
            return new ModelImporter(clock).manifest(modelId, config, parameters, typeElements, files);
        }
    }

    /** The file's tensors by transformers' name, each checked: a Llama-family tensor of a type the workers compute. */
    private static Map<String, GgufTensor> tensors(GgufFile gguf, ModelConfig config) {
        Map<String, GgufTensor> byHfName = new LinkedHashMap<>();
        for (GgufTensor t : gguf.tensors().values()) {
            if (t.name().equals(GgufRopeFreqs.TENSOR)) {
                continue; // read into the config's rope_scaling (GgufLlama.config)
            }
            String hf = GgufLlama.hfName(t.name()).orElseThrow(() -> ModelImporter.invalid("path", gguf.path()
                    + ": tensor '" + t.name() + "' is not part of a Llama-family model"));
            if (!t.type().supported()) {
                throw ModelImporter.invalid("path", gguf.path() + ": tensor '" + t.name() + "' is " + t.type()
                        + ", a type the workers do not compute (they compute " + Arrays.stream(GgmlType.values())
                        .filter(GgmlType::supported).map(Enum::name).collect(Collectors.joining(", ")) + ")");
            }
            byHfName.put(hf, t);
        }
        List<String> required = new ArrayList<>(List.of("model.embed_tokens.weight", "model.norm.weight"));
        if (!config.tieWordEmbeddings()) {
            required.add("lm_head.weight");
        }
        for (int i = 0; i < config.numLayers(); i++) {
            for (String part : List.of("input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                    "self_attn.v_proj.weight", "self_attn.o_proj.weight", "post_attention_layernorm.weight",
                    "mlp.gate_proj.weight", "mlp.up_proj.weight", "mlp.down_proj.weight")) {
                required.add("model.layers." + i + "." + part);
            }
        }
        for (String name : required) {
            if (!byHfName.containsKey(name)) {
                throw ModelImporter.invalid("path", gguf.path() + " has no tensor for " + name
                        + GgufLlama.ggufName(name).map(g -> " (" + g + ")").orElse(""));
            }
        }
        return byHfName;
    }

    /** {@code tokenizer_config.json}: the chat template and the BOS and EOS tokens' text, as transformers saves it. */
    private static Map<String, Object> tokenizerConfig(GgufFile gguf, ModelConfig config) {
        List<?> tokens = gguf.array("tokenizer.ggml.tokens").orElseThrow();
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("bos_token", config.bosTokenId() >= 0 && config.bosTokenId() < tokens.size() ? tokens.get(config.bosTokenId()) : null);
        doc.put("eos_token", config.eosTokenId() >= 0 && config.eosTokenId() < tokens.size() ? tokens.get(config.eosTokenId()) : null);
        doc.put("chat_template", gguf.string("tokenizer.chat_template").orElse(null));
        doc.put("clean_up_tokenization_spaces", false);
        doc.put("model_max_length", config.maxPositions());
        doc.put("tokenizer_class", "PreTrainedTokenizerFast");
        return doc;
    }

    private static ManifestFile shard(GgufFile gguf, String arch, ModelConfig config, Map<String, GgufTensor> byHfName,
                                      List<String> names, Path out, FileKind kind, Integer layer) throws IOException {
        List<SafetensorsWriter.StreamedEntry> entries = new ArrayList<>();
        Map<String, String> metadata = new TreeMap<>();
        for (String name : names) {
            GgufTensor t = byHfName.get(name);
            long rows = t.rows();
            String dtype;
            long[] shape;
            if (t.type().quantized()) {
                dtype = "U8";
                shape = QuantizedTensors.storedShape(t.type(), rows, t.columns());
                metadata.put(QuantizedTensors.typeKey(name), t.type().name());
            } else {
                dtype = t.type() == GgmlType.F32 ? "F32" : t.type().name();
                shape = t.shape();
            }
            int heads = GgufLlama.permutedHeads(arch, name, config);
            entries.add(new SafetensorsWriter.StreamedEntry(name, dtype, shape, t.bytes(), o -> copyRows(gguf, t, heads, o)));
        }
        SafetensorsWriter.writeStreamed(out, entries, metadata);
        return ModelImporter.describe(out, kind, layer, "safetensors");
    }

    /**
     * The tensor's bytes, row by row in transformers' order: file row {@link GgufLlama#sourceRow} for each row when
     * llama.cpp permuted the tensor ({@code heads} > 0), else in chunks as they are.
     */
    private static void copyRows(GgufFile gguf, GgufTensor t, int heads, java.io.OutputStream out) throws IOException {
        boolean vector = t.dims().length == 1; // a bias: its elements are the rows that move
        long rowBytes = vector ? t.type().blockBytes() : t.rowBytes();
        if (heads == 0) {
            ByteBuffer buf = ByteBuffer.allocate((int) Math.min(CHUNK_BYTES, Math.max(1, t.bytes())));
            for (long at = 0; at < t.bytes(); at += buf.capacity()) {
                buf.clear().limit((int) Math.min(buf.capacity(), t.bytes() - at));
                gguf.read(t, at, buf);
                out.write(buf.array(), 0, buf.position());
            }
            return;
        }
        ByteBuffer row = ByteBuffer.allocate((int) rowBytes);
        long rows = vector ? t.columns() : t.rows();
        for (long r = 0; r < rows; r++) {
            row.clear();
            gguf.read(t, GgufLlama.sourceRow(r, rows, heads) * rowBytes, row);
            out.write(row.array(), 0, row.position());
        }
    }
}
