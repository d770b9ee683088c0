package io.butterfly.registry.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.gguf.GgufExport;
import io.butterfly.common.gguf.GgufFile;
import io.butterfly.common.gguf.GgufValue;
import io.butterfly.common.gguf.GgufWriter;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.QuantizedTensors;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.registry.store.ModelStore;
import io.butterfly.testsupport.ModelFixtures;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Quantization on import and GGUF files imported as they are. A GGUF file written as llama.cpp's tools write one
 * (with {@link GgufExport}: its names, permuted query and key rows, quantized blocks) imports into shards holding the
 * same bytes, tensor for tensor, as the model directory quantized on import: the rows are put back in transformers'
 * order and the blocks are the file's.
 */
class QuantizedImportTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @TempDir
    Path tmp;

    /** Whole Q4_K super-blocks (hidden 256, intermediate 512), grouped-query attention, a byte-level tokenizer. */
    static ModelConfig config(boolean tied) {
        return new ModelConfig(Architecture.LLAMA, 2, 256, 4, 2, 512, 300, 64, 1e-5, 10000.0, tied, 1, 2);
    }

    private ModelCatalog catalog() throws IOException {
        return new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));
    }

    @ParameterizedTest
    @EnumSource(WeightQuantization.class)
    void aGgufFileImportsIntoTheShardsOfItsDirectoryQuantizedOnImport(WeightQuantization q) throws Exception {
        for (boolean tied : new boolean[]{false, true}) {
            Path dir = ModelFixtures.write(config(tied), 5, tmp.resolve("src-" + q + "-" + tied + "/tiny"));
            Path gguf = tmp.resolve("tiny-" + q + "-" + tied + ".gguf");
            GgufExport.write(dir, gguf, q);
            ModelCatalog catalog = catalog();

            Manifest fromDir = catalog.importModel(dir, null, q);
            Manifest fromGguf = catalog.importModel(gguf, null);

            assertThat(fromDir.modelId()).isEqualTo("tiny-" + q.id());
            assertThat(fromGguf.modelId()).isEqualTo("tiny-" + q + "-" + tied);
            assertThat(fromDir.dtype()).isEqualTo(fromGguf.dtype()).isEqualTo(q == WeightQuantization.Q8 ? "Q8_0"
                    : q == WeightQuantization.Q4 ? "Q4_0" : "Q4_K");
            assertThat(fromGguf.parameterCount()).isEqualTo(fromDir.parameterCount());
            for (ManifestFile f : fromDir.files()) {
                if (!f.name().endsWith(".safetensors")) {
                    continue;
                }
                try (SafetensorsFile a = SafetensorsFile.open(tmp.resolve("store").resolve(fromDir.modelId()).resolve(f.name()));
                     SafetensorsFile b = SafetensorsFile.open(tmp.resolve("store").resolve(fromGguf.modelId()).resolve(f.name()))) {
                    assertThat(b.tensors().keySet()).as(f.name()).containsExactlyInAnyOrderElementsOf(a.tensors().keySet());
                    for (String t : a.tensors().keySet()) {
                        assertThat(QuantizedTensors.storedType(b, t)).as(t).isEqualTo(QuantizedTensors.storedType(a, t));
                        assertThat(b.rawBytes(t)).as("%s of %s, tied %s", t, q, tied).isEqualTo(a.rawBytes(t));
                    }
                }
            }
            ModelConfig read = ModelConfig.read(tmp.resolve("store").resolve(fromGguf.modelId()).resolve("config.json"));
            ModelConfig original = config(tied);
            assertThat(read.numLayers()).isEqualTo(original.numLayers());
            assertThat(read.numKvHeads()).isEqualTo(original.numKvHeads());
            assertThat(read.tieWordEmbeddings()).isEqualTo(tied);
            assertThat((float) read.normEps()).isEqualTo((float) original.normEps());
            assertThat(read.eosTokenId()).isEqualTo(original.eosTokenId());
        }
    }

    /**
     * Llama 3.1's RoPE scaling: a directory whose config has {@code rope_scaling} llama3, written as a GGUF file the way
     * llama.cpp's converter writes one ({@code rope_freqs.weight}, float32 and in 4 bits), imports with the directory's
     * config, rope scaling included, and the directory's shards: the workers compute the same tokens and logits.
     */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.NullSource
    @EnumSource(value = WeightQuantization.class, names = "Q4")
    void aLlama31GgufImportsWithItsDirectorysRopeScaling(WeightQuantization q) throws Exception {
        ModelConfig llama31 = new ModelConfig(Architecture.LLAMA, 2, 256, 4, 2, 512, 300, 256, 1e-5, 500_000.0, false,
                1, 2, io.butterfly.common.model.RopeScaling.llama3(8.0, 1.0, 4.0, 128));
        String name = q == null ? "f32" : q.id();
        Path dir = ModelFixtures.write(llama31, 9, tmp.resolve("src-" + name + "/llama31"));
        Path gguf = tmp.resolve("llama31-" + name + ".gguf");
        GgufExport.write(dir, gguf, q);
        ModelCatalog catalog = catalog();

        Manifest fromDir = q == null ? catalog.importModel(dir, null) : catalog.importModel(dir, null, q);
        Manifest fromGguf = catalog.importModel(gguf, null);

        ModelConfig read = ModelConfig.read(tmp.resolve("store").resolve(fromGguf.modelId()).resolve("config.json"));
        assertThat(read.ropeScaling()).isEqualTo(llama31.ropeScaling());
        assertThat(read.ropeTheta()).isEqualTo(llama31.ropeTheta());
        assertThat(read.ropeScaling()).isEqualTo(
                ModelConfig.read(tmp.resolve("store").resolve(fromDir.modelId()).resolve("config.json")).ropeScaling());
        assertThat(fromGguf.parameterCount()).isEqualTo(fromDir.parameterCount()); // the divisors are no parameter
        for (ManifestFile f : fromDir.files()) {
            if (f.name().endsWith(".safetensors")) {
                try (SafetensorsFile a = SafetensorsFile.open(tmp.resolve("store").resolve(fromDir.modelId()).resolve(f.name()));
                     SafetensorsFile b = SafetensorsFile.open(tmp.resolve("store").resolve(fromGguf.modelId()).resolve(f.name()))) {
                    assertThat(b.tensors().keySet()).as(f.name()).containsExactlyInAnyOrderElementsOf(a.tensors().keySet());
                    for (String t : a.tensors().keySet()) {
                        assertThat(b.rawBytes(t)).as("%s (%s)", t, name).isEqualTo(a.rawBytes(t));
                    }
                }
            }
        }
    }

    @Test
    void aGgufVocabularyBecomesTheSameTokenizer() throws Exception {
        Path dir = ModelFixtures.write(config(false), 5, tmp.resolve("src/tiny"));
        Path gguf = tmp.resolve("tiny.gguf");
        GgufExport.write(dir, gguf, null);
        Manifest m = catalog().importModel(gguf, null);
        assertThat(m.dtype()).isEqualTo("F32");
        JsonNode original = JSON.readTree(dir.resolve("tokenizer.json").toFile());
        JsonNode imported = JSON.readTree(tmp.resolve("store/tiny/tokenizer.json").toFile());
        assertThat(imported.at("/model/vocab")).isEqualTo(original.at("/model/vocab"));
        assertThat(imported.at("/model/merges")).isEqualTo(original.at("/model/merges"));
        assertThat(imported.at("/pre_tokenizer/type").asString()).isEqualTo("ByteLevel");
        Map<Integer, String> specials = new HashMap<>();
        original.get("added_tokens").forEach(t -> specials.put(t.get("id").asInt(), t.get("content").asString()));
        imported.get("added_tokens").forEach(t -> assertThat(specials.get(t.get("id").asInt()))
                .isEqualTo(t.get("content").asString()));
        assertThat(imported.get("added_tokens").size()).isEqualTo(specials.size());
        JsonNode tokenizerConfig = JSON.readTree(tmp.resolve("store/tiny/tokenizer_config.json").toFile());
        assertThat(tokenizerConfig.get("chat_template").asString())
                .isEqualTo(JSON.readTree(dir.resolve("tokenizer_config.json").toFile()).get("chat_template").asString());
    }

    @Test
    void aTensorOfATypeTheWorkersDoNotComputeIsRefusedNamingIt() throws Exception {
        Path dir = ModelFixtures.write(config(false), 5, tmp.resolve("src/tiny"));
        Path gguf = tmp.resolve("tiny.gguf");
        GgufExport.write(dir, gguf, null);
        Path q5 = tmp.resolve("q5.gguf");
        rewriteWithType(gguf, q5, "blk.1.ffn_down.weight", GgmlType.Q5_K);
        assertThatThrownBy(() -> catalog().importModel(q5, null)).isInstanceOf(ButterflyException.class)
                .hasMessageContaining("'blk.1.ffn_down.weight'").hasMessageContaining("Q5_K");
        assertThat(catalog().list()).isEmpty();
    }

    @Test
    void aGgufFileIsNotQuantizedAgain() throws Exception {
        Path dir = ModelFixtures.write(config(false), 5, tmp.resolve("src/tiny"));
        Path gguf = tmp.resolve("tiny.gguf");
        GgufExport.write(dir, gguf, WeightQuantization.Q8);
        assertThatThrownBy(() -> catalog().importModel(gguf, null, WeightQuantization.Q4))
                .isInstanceOf(ButterflyException.class).hasMessageContaining("not quantized again");
    }

    /** A copy of {@code from} whose tensor {@code name} is declared of {@code type} (its bytes sized to fit). */
    private static void rewriteWithType(Path from, Path to, String name, GgmlType type) throws IOException {
        try (GgufFile f = GgufFile.open(from)) {
            GgufWriter w = new GgufWriter();
            for (Map.Entry<String, GgufValue> e : f.metadata().entrySet()) {
                w.put(e.getKey(), e.getValue());
            }
            for (var t : f.tensors().values()) {
                GgmlType declared = t.name().equals(name) ? type : t.type();
                long bytes = declared.rowBytes(t.columns()) * t.rows();
                w.tensor(t.name(), declared, t.dims(), out -> {
                    ByteBuffer buf = ByteBuffer.allocate((int) Math.min(bytes, t.bytes()));
                    f.read(t, 0, buf);
                    out.write(buf.array(), 0, buf.position());
                    out.write(new byte[(int) (bytes - buf.position())]);
                });
            }
            w.write(to);
        }
    }
}
