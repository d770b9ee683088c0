package io.butterfly.coordinator.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.google.protobuf.ByteString;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.ManifestMessages;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.ManifestVerifier;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.TokenizerGenerator;
import io.butterfly.coordinator.gateway.registry.RegistryGateway;
import io.butterfly.coordinator.jinja.JinjavaChatTemplates;
import io.butterfly.coordinator.tokenizer.DjlTokenizers;
import io.butterfly.proto.registry.v1.FetchFileRequest;
import io.butterfly.proto.registry.v1.FileChunk;
import io.butterfly.proto.registry.v1.FileKind;
import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.proto.registry.v1.WeightFile;
import io.butterfly.testsupport.InProcessGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A coordinator replica asked to serve right after the cluster became READY, before its background fetch of the
 * model got it (the registry refused that fetch here), fetches the model itself instead of refusing the request.
 * The registry is a fake served in-process, reached through the real gateway.
 */
class ModelCatalogTest {

    private static final ModelConfig CONFIG = new ModelConfig(Architecture.LLAMA, 2, 8, 2, 1, 16, 300, 32, 1e-5,
            10000.0, false, 1, 2);

    /** Serves one signed manifest and its files, or answers UNAVAILABLE while {@code down}. */
    static final class Registry extends ModelRegistryGrpc.ModelRegistryImplBase {
        volatile boolean down = true;
        volatile String importFailed;
        ModelManifest manifest;
        Path dir;

        @Override
        public void getManifest(GetManifestRequest request, StreamObserver<ModelManifest> response) {
            if (importFailed != null) {
                response.onError(Status.FAILED_PRECONDITION.withDescription(importFailed).asRuntimeException());
                return;
            }
            if (down) {
                response.onError(Status.UNAVAILABLE.withDescription("registry restarting").asRuntimeException());
                return;
            }
            response.onNext(manifest);
            response.onCompleted();
        }

        @Override
        public void fetchFile(FetchFileRequest request, StreamObserver<FileChunk> response) {
            byte[] all;
            try {
                all = Files.readAllBytes(dir.resolve(request.getFileName()));
            } catch (IOException e) {
                response.onError(e);
                return;
            }
            CRC32C crc = new CRC32C();
            crc.update(all);
            response.onNext(FileChunk.newBuilder().setFileName(request.getFileName()).setData(ByteString.copyFrom(all))
                    .setCrc32C((int) crc.getValue()).setFileSize(all.length).setLast(true).build());
            response.onCompleted();
        }
    }

    @TempDir
    Path tmp;

    private final Registry registry = new Registry();
    private final NodeIdentity publisher = NodeIdentity.ephemeral();
    private InProcessGrpc server;
    private RegistryGateway gateway;
    private ModelCatalog catalog;

    @BeforeEach
    void start() throws Exception {
        registry.dir = Files.createDirectories(tmp.resolve("published"));
        registry.manifest = publish(registry.dir, publisher, null);
        server = InProcessGrpc.serving(registry);
        gateway = new RegistryGateway(server.channel());
        catalog = new ModelCatalog(new ModelCatalog.Settings("tiny", tmp.resolve("coordinator"),
                List.of(publisher.publicKeyHex())), gateway, new DjlTokenizers(),
                new JinjavaChatTemplates(Clock.systemUTC()));
    }

    @AfterEach
    void stop() {
        catalog.close();
        gateway.close();
        server.close();
    }

    @Test
    void aReplicaThatDoesNotHoldTheServedModelYetFetchesItWhenAsked() {
        String root = registry.manifest.getMerkleRoot();
        assertThat(catalog.holds(root)).isFalse();
        registry.down = false;

        ServedModel model = catalog.servedFor(root);

        assertThat(model.manifest()).isEqualTo(ManifestMessages.fromProto(registry.manifest));
        assertThat(model.config().vocabSize()).isEqualTo(CONFIG.vocabSize());
        assertThat(model.tokenizer().encode("hello")).isNotEmpty();
        assertThat(catalog.holds(root)).isTrue();
        assertThat(catalog.servedFor(root)).isSameAs(model);
    }

    /**
     * The coordinator and the registry start together: the coordinator's first call can come before the registry
     * serves, and fails. Once the registry serves, the next call reaches it (grpc would otherwise fail every call for
     * the reconnect backoff that failure started, with its "Could not find server": a replica asked right after
     * READY answered 503).
     */
    @Test
    void aRegistryThatCameUpAfterTheFirstCallIsReachedByTheNext() throws Exception {
        registry.down = false;
        String name = InProcessServerBuilder.generateName();
        ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
        try (RegistryGateway early = new RegistryGateway(channel)) {
            // the first call, as grpc makes it by default (fail fast): the channel now waits out a reconnect backoff
            assertThatThrownBy(() -> ModelRegistryGrpc.newBlockingStub(channel)
                    .getManifest(GetManifestRequest.newBuilder().setModelId("tiny").build()))
                    .hasMessageContaining("Could not find server");
            Server late = InProcessServerBuilder.forName(name).addService(registry).build().start();
            try {
                ModelCatalog replica = new ModelCatalog(new ModelCatalog.Settings("tiny", tmp.resolve("replica"),
                        List.of(publisher.publicKeyHex())), early, new DjlTokenizers(),
                        new JinjavaChatTemplates(Clock.systemUTC()));
                try {
                    assertThat(replica.servedFor(registry.manifest.getMerkleRoot()).manifest())
                            .isEqualTo(ManifestMessages.fromProto(registry.manifest));
                } finally {
                    replica.close();
                }
            } finally {
                late.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void aRegistryThatCannotGiveTheModelMakesTheRequestRetryable() {
        assertThatThrownBy(() -> catalog.servedFor(registry.manifest.getMerkleRoot()))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.kind()).isEqualTo(ErrorKind.UNAVAILABLE);
                    assertThat(e.getMessage()).contains("this coordinator has not fetched model tiny (merkle root "
                            + registry.manifest.getMerkleRoot() + ")").contains("registry restarting");
                });
        assertThat(catalog.holds(registry.manifest.getMerkleRoot())).isFalse();
    }

    @Test
    void aModelWhoseImportFailedIsUnavailableWithTheRegistrysCauseUntilItIsServed() throws Exception {
        registry.importFailed = "the import of model 'tiny' from /models/tiny failed: the registry ran out of memory";
        assertThatThrownBy(catalog::load).isInstanceOf(ModelImportFailedException.class);
        assertThat(catalog.unavailable()).hasValueSatisfying(u -> assertThat(u.cause()).contains("ran out of memory"));
        long since = catalog.unavailable().orElseThrow().sinceMs();
        assertThatThrownBy(catalog::load).isInstanceOf(ModelImportFailedException.class);
        assertThat(catalog.unavailable().orElseThrow().sinceMs()).isEqualTo(since);

        registry.importFailed = null;
        registry.down = false;
        catalog.load();
        assertThat(catalog.unavailable()).isEmpty();
    }

    @Test
    void anotherPublicationThanTheClusterServesIsNotServedFrom() {
        registry.down = false;
        String clusterRoot = "ab".repeat(32);

        assertThatThrownBy(() -> catalog.servedFor(clusterRoot))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.kind()).isEqualTo(ErrorKind.UNAVAILABLE);
                    assertThat(e.code()).isEqualTo(ErrorCode.MERKLE_ROOT_MISMATCH);
                    assertThat(e.getMessage()).contains("the registry serves model tiny with merkle root "
                            + registry.manifest.getMerkleRoot());
                });
        assertThat(catalog.holds(clusterRoot)).isFalse();
    }

    @Test
    void theStopTokensAreTheGenerationConfigsWhenTheManifestListsOne() throws Exception {
        registry.down = false;
        registry.manifest = publish(registry.dir, publisher, "{\"eos_token_id\": [7, 9]}");

        ModelConfig served = catalog.servedFor(registry.manifest.getMerkleRoot()).config();

        assertThat(served.endsSequence(7)).isTrue();
        assertThat(served.endsSequence(9)).isTrue();
        assertThat(served.endsSequence(CONFIG.eosTokenId())).isFalse();
        assertThat(served.withEndOfSequence(List.of(CONFIG.eosTokenId()))).isEqualTo(CONFIG);

        // A later publication without one: the copy the coordinator fetched before is not read.
        registry.manifest = publish(registry.dir, publisher, null);
        assertThat(catalog.servedFor(registry.manifest.getMerkleRoot()).config()).isEqualTo(CONFIG);
        assertThat(tmp.resolve("coordinator/models/tiny/generation_config.json")).exists();
    }

    /**
     * The chat template comes with the model, verified like its other files: chat_template.jinja when the manifest
     * lists one (it wins over tokenizer_config.json's, as in transformers), the special tokens from
     * tokenizer_config.json; a model without either has none.
     */
    @Test
    void theChatTemplateIsTheManifestsWithItsSpecialTokens() throws Exception {
        registry.down = false;
        assertThat(catalog.servedFor(registry.manifest.getMerkleRoot()).chatTemplate()).isNull();

        Files.writeString(registry.dir.resolve("tokenizer_config.json"), """
                {"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
                 "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}"}""");
        registry.manifest = publish(registry.dir, publisher, null, "tokenizer_config.json");
        ServedModel withConfig = catalog.servedFor(registry.manifest.getMerkleRoot());
        assertThat(withConfig.chatTemplate().render(List.of(new ChatTemplate.Message("user", "hi"))))
                .isEqualTo("<s>[user] hi");

        Files.writeString(registry.dir.resolve("chat_template.jinja"), "{{ eos_token }}:{{ messages[0].content }}\n");
        registry.manifest = publish(registry.dir, publisher, null, "tokenizer_config.json", "chat_template.jinja");
        assertThat(catalog.servedFor(registry.manifest.getMerkleRoot()).chatTemplate()
                .render(List.of(new ChatTemplate.Message("user", "hi")))).isEqualTo("</s>:hi");

        // Published again without them: the copies fetched before are not read.
        registry.manifest = publish(registry.dir, publisher, null);
        assertThat(catalog.servedFor(registry.manifest.getMerkleRoot()).chatTemplate()).isNull();
    }

    /**
     * config.json and tokenizer.json of a tiny Llama in {@code dir} (and a generation_config.json, unless null, and
     * the tokenizer files named, already in {@code dir}), and their signed manifest.
     */
    private static ModelManifest publish(Path dir, NodeIdentity publisher, String generationConfig,
                                         String... tokenizerFiles) throws IOException {
        CONFIG.write(dir.resolve("config.json"));
        TokenizerGenerator.write(CONFIG, dir.resolve("tokenizer.json"));
        List<WeightFile> files = new ArrayList<>(List.of(file(dir, "config.json", FileKind.CONFIG),
                file(dir, "tokenizer.json", FileKind.TOKENIZER)));
        if (generationConfig != null) {
            Files.writeString(dir.resolve("generation_config.json"), generationConfig);
            files.add(file(dir, "generation_config.json", FileKind.CONFIG));
        }
        for (String name : tokenizerFiles) {
            files.add(file(dir, name, name.endsWith(".jinja") ? FileKind.CHAT_TEMPLATE : FileKind.TOKENIZER_CONFIG));
        }
        ModelManifest unsigned = ModelManifest.newBuilder().setModelId("tiny").setArchitecture("llama").setVersion("1")
                .setNumLayers(CONFIG.numLayers()).setHiddenSize(CONFIG.hiddenSize()).setVocabSize(CONFIG.vocabSize())
                .setDtype("F32").addAllFiles(files)
                .setMerkleRoot(MerkleTree.rootHex(files.stream().map(WeightFile::getChecksum).toList()))
                .build();
        return ManifestMessages.toProto(ManifestVerifier.sign(ManifestMessages.fromProto(unsigned), publisher));
    }

    private static WeightFile file(Path dir, String name, FileKind kind) throws IOException {
        Path f = dir.resolve(name);
        return WeightFile.newBuilder().setName(name).setSizeBytes(Files.size(f)).setChecksumAlgorithm("sha256")
                .setChecksum(Sha256.hexOfFile(f)).setKind(kind).setFormat("json").build();
    }
}
