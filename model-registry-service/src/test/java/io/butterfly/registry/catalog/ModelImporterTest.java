package io.butterfly.registry.catalog;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.manifest.FileKind;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.SafetensorsWriter;
import io.butterfly.common.safetensors.TensorInfo;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.registry.store.ModelStore;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ModelImporterTest {

    @TempDir
    Path tmp;

    @Test
    void llamaWithItsOwnHeadIsSplitIntoOneShardPerStage() throws Exception {
        ModelConfig config = ModelFixtures.tinyLlama(false);
        List<SafetensorsWriter.Entry> source = ModelFixtures.tensors(ModelFixtures.write(config, 7, tmp.resolve("src/llama-tiny")));
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));

        Manifest m = catalog.importModel(tmp.resolve("src/llama-tiny"), null);

        assertThat(m.modelId()).isEqualTo("llama-tiny");
        assertThat(m.architecture()).isEqualTo("llama");
        assertThat(m.numLayers()).isEqualTo(3);
        assertThat(m.hiddenSize()).isEqualTo(16);
        assertThat(m.vocabSize()).isEqualTo(300);
        assertThat(m.dtype()).isEqualTo("F32");
        assertThat(m.parameterCount()).isEqualTo(config.parameterCount());
        assertThat(m.files()).extracting(ManifestFile::name).containsExactly("config.json", "tokenizer.json",
                "generation_config.json", "tokenizer_config.json", "embed.safetensors", "layer-00000.safetensors",
                "layer-00001.safetensors", "layer-00002.safetensors", "head.safetensors");
        assertThat(m.files()).extracting(ManifestFile::kind).containsExactly(FileKind.CONFIG, FileKind.TOKENIZER,
                FileKind.CONFIG, FileKind.TOKENIZER_CONFIG, FileKind.EMBEDDING, FileKind.LAYER, FileKind.LAYER,
                FileKind.LAYER, FileKind.HEAD);
        for (int i = 0; i < 3; i++) {
            ManifestFile f = m.files().get(5 + i);
            assertThat(f.layerStart()).isEqualTo(i);
            assertThat(f.layerEnd()).isEqualTo(i + 1);
            assertThat(f.format()).isEqualTo("safetensors");
        }
        assertThat(m.files().get(0).format()).isEqualTo("json");

        Path dir = tmp.resolve("store/llama-tiny");
        assertChecksumsAndMerkleRoot(m, dir);
        Map<String, List<String>> where = tensorsByShard(m, dir, source);
        assertThat(where.get("model.embed_tokens.weight")).containsExactly("embed.safetensors");
        assertThat(where.get("lm_head.weight")).containsExactly("head.safetensors");
        assertThat(where.get("model.norm.weight")).containsExactly("head.safetensors");
        assertThat(where.get("model.layers.2.mlp.down_proj.weight")).containsExactly("layer-00002.safetensors");
        where.forEach((name, shards) -> assertThat(shards).as(name).hasSize(1));
        assertThat(Files.readString(dir.resolve("config.json")))
                .isEqualTo(Files.readString(tmp.resolve("src/llama-tiny/config.json")));
    }

    @Test
    void tiedGpt2InSeveralFilesKeepsNamesAndDtypeAndCopiesTheEmbeddingIntoTheHead() throws Exception {
        ModelConfig config = ModelFixtures.tinyGpt2();
        List<SafetensorsWriter.Entry> source = ModelFixtures.tensors(ModelFixtures.write(config,
                ModelGenerator.Options.defaults().withDtype("F16").withShards(3), 11, tmp.resolve("src/gpt2-tiny")));
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));

        Manifest m = catalog.importModel(tmp.resolve("src/gpt2-tiny"), "gpt2-renamed");

        assertThat(m.modelId()).isEqualTo("gpt2-renamed");
        assertThat(m.architecture()).isEqualTo("gpt2");
        assertThat(m.dtype()).isEqualTo("F16");
        assertThat(m.parameterCount()).as("tied embedding counted once").isEqualTo(config.parameterCount());
        Path dir = tmp.resolve("store/gpt2-renamed");
        assertChecksumsAndMerkleRoot(m, dir);
        Map<String, List<String>> where = tensorsByShard(m, dir, source);
        assertThat(where.get("transformer.wte.weight")).containsExactly("embed.safetensors", "head.safetensors");
        assertThat(where.get("transformer.wpe.weight")).containsExactly("embed.safetensors");
        assertThat(where.get("transformer.ln_f.bias")).containsExactly("head.safetensors");
        assertThat(where.get("transformer.h.1.attn.c_attn.weight")).containsExactly("layer-00001.safetensors");
        where.forEach((name, shards) -> {
            if (!name.equals("transformer.wte.weight")) {
                assertThat(shards).as(name).hasSize(1);
            }
        });
    }

    @Test
    void importIsIdempotentAndRedoneWhenTheSourceChanges() throws Exception {
        ModelFixtures.write(ModelFixtures.tinyLlama(true), 3, tmp.resolve("src/m"));
        ModelStore store = new ModelStore(tmp.resolve("store"));
        Manifest first = new ModelCatalog(store, new ModelImporter(Clock.systemUTC())).importModel(tmp.resolve("src/m"), null);
        Path head = tmp.resolve("store/m/head.safetensors");
        FileTime written = Files.getLastModifiedTime(head);

        // A "restart": a new catalog over the same store serves the stored import without redoing it.
        ModelCatalog restarted = new ModelCatalog(store, new ModelImporter(Clock.systemUTC()));
        restarted.loadStored();
        assertThat(restarted.get("m")).isEqualTo(first);
        Manifest again = restarted.importModel(tmp.resolve("src/m"), null);
        assertThat(again).isEqualTo(first);
        assertThat(Files.getLastModifiedTime(head)).isEqualTo(written);

        // Tied Llama: the head carries the embedding copy.
        try (SafetensorsFile f = SafetensorsFile.open(head)) {
            assertThat(f.tensors()).containsKeys("model.norm.weight", "model.embed_tokens.weight");
        }

        Path weights = tmp.resolve("src/m/model.safetensors");
        Files.setLastModifiedTime(weights, FileTime.fromMillis(Files.getLastModifiedTime(weights).toMillis() + 5_000));
        Manifest redone = restarted.importModel(tmp.resolve("src/m"), null);
        assertThat(redone.createdAtMs()).isGreaterThanOrEqualTo(first.createdAtMs());
        assertThat(redone.merkleRoot()).isEqualTo(first.merkleRoot());
        try (var s = Files.list(tmp.resolve("store"))) {
            assertThat(s.map(p -> p.getFileName().toString()).toList()).containsExactly("m");
        }
    }

    @Test
    void aGenerationConfigIsServedAsAConfigFileAndABadOneIsRefusedNamingIt() throws Exception {
        Path src = tmp.resolve("src/llama-tiny");
        ModelFixtures.write(ModelFixtures.tinyLlama(false), 7, src);
        Files.writeString(src.resolve("generation_config.json"), "{\"eos_token_id\": [2, 5], \"do_sample\": true}");
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));

        Manifest m = catalog.importModel(src, null);

        assertThat(m.files()).extracting(ManifestFile::name).startsWith("config.json", "tokenizer.json",
                "generation_config.json", "tokenizer_config.json", "embed.safetensors");
        assertThat(m.files().get(2).kind()).isEqualTo(FileKind.CONFIG);
        assertChecksumsAndMerkleRoot(m, tmp.resolve("store/llama-tiny"));
        assertThat(Files.readString(tmp.resolve("store/llama-tiny/generation_config.json")))
                .isEqualTo(Files.readString(src.resolve("generation_config.json")));

        Files.writeString(src.resolve("generation_config.json"), "{\"eos_token_id\": \"</s>\"}");
        assertThatThrownBy(() -> catalog.importModel(src, "bad-generation-config"))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                    assertThat(e.context()).containsEntry("field", "path");
                    assertThat(e.getMessage()).contains("generation_config.json", "eos_token_id");
                });
    }

    /** The chat template and its special tokens are signed with the model, for the coordinator alone. */
    @Test
    void theChatTemplateFilesAreTheCoordinatorsAndABadConfigIsRefusedNamingIt() throws Exception {
        Path src = tmp.resolve("src/llama-tiny");
        ModelFixtures.write(ModelFixtures.tinyLlama(false), 7, src);
        Files.writeString(src.resolve("chat_template.jinja"), "{% for m in messages %}{{ m.content }}{% endfor %}\n");
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));

        Manifest m = catalog.importModel(src, null);

        ManifestFile config = m.files().stream().filter(f -> f.name().equals("tokenizer_config.json")).findFirst()
                .orElseThrow();
        ManifestFile template = m.files().stream().filter(f -> f.name().equals("chat_template.jinja")).findFirst()
                .orElseThrow();
        assertThat(config.kind()).isEqualTo(FileKind.TOKENIZER_CONFIG);
        assertThat(template.kind()).isEqualTo(FileKind.CHAT_TEMPLATE);
        assertThat(template.format()).isEqualTo("jinja");
        for (ManifestFile f : List.of(config, template)) {
            assertThat(f.neededByCoordinator()).isTrue();
            assertThat(f.neededBy(0, 2, true, true)).as("no stage fetches it").isFalse();
        }
        assertChecksumsAndMerkleRoot(m, tmp.resolve("store/llama-tiny"));
        assertThat(Files.readString(tmp.resolve("store/llama-tiny/chat_template.jinja")))
                .isEqualTo(Files.readString(src.resolve("chat_template.jinja")));

        Files.writeString(src.resolve("tokenizer_config.json"), "{\"chat_template\": 7}");
        assertThatThrownBy(() -> catalog.importModel(src, "bad-tokenizer-config"))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                    assertThat(e.context()).containsEntry("field", "path");
                    assertThat(e.getMessage()).contains("tokenizer_config.json", "chat_template");
                });
    }

    @Test
    void aDirectoryThatIsNotAModelIsRefusedNamingThePath() throws Exception {
        Files.createDirectories(tmp.resolve("empty"));
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));
        assertThatThrownBy(() -> catalog.importModel(tmp.resolve("empty"), null))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                    assertThat(e.context()).containsEntry("field", "path");
                });
        assertThatThrownBy(() -> catalog.importModel(tmp.resolve("missing"), null))
                .isInstanceOf(ButterflyException.class);
        assertThatThrownBy(() -> catalog.get("nope"))
                .isInstanceOfSatisfying(ButterflyException.class,
                        e -> assertThat(e.code()).isEqualTo(ErrorCode.MANIFEST_NOT_FOUND));
    }

    @Test
    void aLayerIndexBeyondAnyIntIsRefusedAsInvalidNotACrash() throws Exception {
        List<SafetensorsWriter.Entry> tensors = new ArrayList<>(ModelFixtures.tensors(
                ModelFixtures.write(ModelFixtures.tinyLlama(false), 7, tmp.resolve("src/big-index"))));
        tensors.add(SafetensorsWriter.Entry.float32("model.layers.99999999999.extra.weight", new long[]{2}, new float[]{1, 2}));
        SafetensorsWriter.write(tmp.resolve("src/big-index/model.safetensors"), tensors, Map.of("format", "pt"));
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));

        assertThatThrownBy(() -> catalog.importModel(tmp.resolve("src/big-index"), null))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                    assertThat(e.context()).containsEntry("field", "path");
                    assertThat(e.getMessage()).contains("layer 99999999999", "3 layers");
                });
    }

    @Test
    void aModelIdThatNamesTheStoresPublisherKeyDirectoryIsRefusedAndTheKeyKept() throws Exception {
        Path store = tmp.resolve("store");
        Path publisher = store.resolve("publisher");
        Files.createDirectories(publisher);
        Files.writeString(publisher.resolve("identity.key"), "secret");
        ModelFixtures.write(ModelFixtures.tinyLlama(false), 7, tmp.resolve("src/publisher"));
        ModelCatalog catalog = new ModelCatalog(new ModelStore(store, List.of(publisher)), new ModelImporter(Clock.systemUTC()));

        for (String asked : new String[]{null, "publisher"}) {
            assertThatThrownBy(() -> catalog.importModel(tmp.resolve("src/publisher"), asked))
                    .isInstanceOfSatisfying(ButterflyException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                        assertThat(e.context()).containsEntry("field", asked == null ? "path" : "model_id");
                        assertThat(e.getMessage()).contains("reserved");
                    });
        }
        assertThat(Files.readString(publisher.resolve("identity.key"))).isEqualTo("secret");
        // Under another id the same source imports.
        assertThat(catalog.importModel(tmp.resolve("src/publisher"), "pub-model").modelId()).isEqualTo("pub-model");
        assertThat(catalog.list()).extracting(Manifest::modelId).containsExactly("pub-model");
    }

    @Test
    void weightsInADtypeWorkersCannotLoadAreRefusedAtImport() throws Exception {
        // Signed and served, such a model would only fail on every worker, at partition load.
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));
        for (String dtype : new String[]{"I8", "F64", "F8_E4M3"}) {
            Path src = tmp.resolve("src/q-" + dtype.toLowerCase());
            retyped(ModelFixtures.write(ModelFixtures.tinyLlama(false), 7, src), dtype);
            assertThatThrownBy(() -> catalog.importModel(src, null))
                    .isInstanceOfSatisfying(ButterflyException.class, e -> {
                        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                        assertThat(e.context()).containsEntry("field", "path");
                        assertThat(e.getMessage()).contains(dtype, "F32, F16 or BF16");
                    });
        }
        assertThat(catalog.list()).isEmpty();
        ModelFixtures.write(ModelFixtures.tinyLlama(false), ModelGenerator.Options.defaults().withDtype("BF16"), 7,
                tmp.resolve("src/bf16"));
        assertThat(catalog.importModel(tmp.resolve("src/bf16"), null).dtype()).isEqualTo("BF16");
    }

    @Test
    void aFileLinkedFromOutsideTheModelDirectoryIsRefusedAndNotServed() throws Exception {
        // Whoever can write a model directory must not get the registry to read and serve its other files
        // (its publisher key, /proc/self/environ): tokenizer.json is copied verbatim.
        Path secret = tmp.resolve("store/publisher/identity.key");
        Files.createDirectories(secret.getParent());
        Files.writeString(secret, "{\"private\":\"secret\"}");
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store"), List.of(secret.getParent())),
                new ModelImporter(Clock.systemUTC()));
        Path src = tmp.resolve("src/leaky");
        ModelFixtures.write(ModelFixtures.tinyLlama(false), 7, src);
        Files.delete(src.resolve("tokenizer.json"));
        Files.createSymbolicLink(src.resolve("tokenizer.json"), secret);

        assertThatThrownBy(() -> catalog.importModel(src, null))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MANIFEST);
                    assertThat(e.context()).containsEntry("field", "path");
                    assertThat(e.getMessage()).contains("tokenizer.json", "outside");
                });
        assertThat(catalog.list()).isEmpty();
        assertThat(tmp.resolve("store/leaky")).doesNotExist();

        // A weights file linked from elsewhere, through a link that stays inside, is refused too.
        Path other = tmp.resolve("src/other");
        ModelFixtures.write(ModelFixtures.tinyLlama(false), 7, other);
        Path linked = tmp.resolve("src/linked");
        ModelFixtures.write(ModelFixtures.tinyLlama(false), 7, linked);
        Files.delete(linked.resolve("model.safetensors"));
        Files.createSymbolicLink(linked.resolve("inner.safetensors"), other.resolve("model.safetensors"));
        Files.createSymbolicLink(linked.resolve("model.safetensors"), linked.resolve("inner.safetensors"));
        assertThatThrownBy(() -> catalog.importModel(linked, null))
                .isInstanceOfSatisfying(ButterflyException.class, e -> assertThat(e.getMessage()).contains("outside"));
    }

    @Test
    void aHuggingFaceCacheSnapshotWhoseFilesLinkIntoItsBlobsImports() throws Exception {
        // models--org--name/snapshots/<revision>/<file> -> ../../blobs/<hash>, as huggingface_hub stores them.
        Path repo = tmp.resolve("hub/models--org--tiny");
        Path written = tmp.resolve("written");
        ModelFixtures.write(ModelFixtures.tinyLlama(true), ModelGenerator.Options.defaults().withShards(2), 5, written);
        Path blobs = Files.createDirectories(repo.resolve("blobs"));
        Path snapshot = Files.createDirectories(repo.resolve("snapshots/0123abcd"));
        try (var files = Files.list(written)) {
            for (Path f : files.toList()) {
                Path blob = Files.move(f, blobs.resolve("blob-" + f.getFileName()));
                Files.createSymbolicLink(snapshot.resolve(f.getFileName()), Path.of("../../blobs").resolve(blob.getFileName()));
            }
        }
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));

        Manifest m = catalog.importModel(snapshot, "tiny");

        assertThat(m.numLayers()).isEqualTo(3);
        assertChecksumsAndMerkleRoot(m, tmp.resolve("store/tiny"));
    }

    /**
     * Rewrites the model in {@code dir} with every tensor in {@code dtype} (zero bytes of the right size): a dtype
     * the generator does not write, as a quantised or double-precision checkpoint has it.
     */
    private static void retyped(Path dir, String dtype) throws Exception {
        List<SafetensorsWriter.Entry> retyped = new ArrayList<>();
        for (SafetensorsWriter.Entry e : ModelFixtures.tensors(dir)) {
            long bytes = TensorInfo.elementSize(dtype);
            for (long d : e.shape()) {
                bytes *= d;
            }
            retyped.add(new SafetensorsWriter.Entry(e.name(), dtype, e.shape(), ByteBuffer.allocate((int) bytes)));
        }
        SafetensorsWriter.write(dir.resolve("model.safetensors"), retyped, Map.of("format", "pt"));
    }

    private static void assertChecksumsAndMerkleRoot(Manifest m, Path dir) throws Exception {
        List<String> sums = new ArrayList<>();
        for (ManifestFile f : m.files()) {
            Path p = dir.resolve(f.name());
            assertThat(f.sizeBytes()).as(f.name()).isEqualTo(Files.size(p));
            assertThat(f.checksum()).as(f.name()).isEqualTo(Sha256.hexOfFile(p)).matches("[0-9a-f]{64}");
            assertThat(f.checksumAlgorithm()).isEqualTo("sha256");
            sums.add(f.checksum());
        }
        assertThat(m.merkleRoot()).isEqualTo(MerkleTree.rootHex(sums));
    }

    /** Which shards hold each source tensor; asserts bytes, dtype and shape are unchanged. */
    private static Map<String, List<String>> tensorsByShard(Manifest m, Path dir, List<SafetensorsWriter.Entry> source)
            throws Exception {
        Map<String, SafetensorsWriter.Entry> byName = new HashMap<>();
        source.forEach(e -> byName.put(e.name(), e));
        Map<String, List<String>> where = new HashMap<>();
        for (ManifestFile f : m.files()) {
            if (!f.format().equals("safetensors")) {
                continue;
            }
            try (SafetensorsFile sf = SafetensorsFile.open(dir.resolve(f.name()))) {
                for (TensorInfo t : sf.tensors().values()) {
                    SafetensorsWriter.Entry e = byName.get(t.name());
                    assertThat(e).as(t.name()).isNotNull();
                    assertThat(t.dtype()).isEqualTo(e.dtype());
                    assertThat(t.shape()).isEqualTo(e.shape());
                    ByteBuffer expected = e.data().duplicate().rewind();
                    assertThat(sf.rawBytes(t.name())).isEqualTo(expected);
                    where.computeIfAbsent(t.name(), k -> new ArrayList<>()).add(f.name());
                }
            }
        }
        assertThat(where.keySet()).containsExactlyInAnyOrderElementsOf(byName.keySet());
        return where;
    }
}
