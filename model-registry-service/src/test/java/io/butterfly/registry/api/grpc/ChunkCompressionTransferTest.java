package io.butterfly.registry.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.grpc.ManifestMessages;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.transfer.ShardDownloader;
import io.butterfly.proto.registry.v1.ChunkCompression;
import io.butterfly.proto.registry.v1.FileChunk;
import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.testsupport.InProcessGrpc;
import io.grpc.ServerInterceptors;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.grpc.server.exception.GrpcExceptionHandlerInterceptor;

/** zstd chunks are used only when the client offers the COMPRESSION feature, and files arrive identical. */
class ChunkCompressionTransferTest {

    @TempDir
    Path tmp;

    private InProcessGrpc registry;
    private ModelRegistryGrpc.ModelRegistryBlockingStub stub;
    private Manifest manifest;
    private final List<FileChunk> sent = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws Exception {
        ModelCatalog catalog = TransferFixtures.importTiny(tmp, 5);
        registry = InProcessGrpc.serving(ServerInterceptors.intercept(new ModelRegistryGrpcService(catalog, 4096, 3),
                new GrpcExceptionHandlerInterceptor(new ButterflyGrpcExceptionHandler()),
                TransferFixtures.recordResponses(FileChunk.class, sent)));
        stub = ModelRegistryGrpc.newBlockingStub(registry.channel());
        manifest = ManifestMessages.fromProto(stub.getManifest(GetManifestRequest.newBuilder().setModelId("tiny").build()));
    }

    @AfterEach
    void stop() {
        registry.close();
    }

    @Test
    void offeringCompressionGetsZstdChunksOfCompressibleFilesAndIdenticalBytes() throws Exception {
        List<String> names = manifest.files().stream().map(ManifestFile::name).toList();
        Path dest = tmp.resolve("with");
        List<Path> paths = new ShardDownloader(stub, Duration.ofSeconds(30), 4096).withCompression(true)
                .download(manifest, names, dest, null);
        for (int i = 0; i < names.size(); i++) {
            assertThat(paths.get(i)).hasSameBinaryContentAs(tmp.resolve("store/tiny").resolve(names.get(i)));
        }
        // JSON (config, tokenizer) compresses; random weights mostly do not and go as they are.
        List<FileChunk> zstd = sent.stream()
                .filter(c -> c.getCompression() == ChunkCompression.CHUNK_COMPRESSION_ZSTD).toList();
        assertThat(zstd).isNotEmpty().allSatisfy(c -> assertThat(c.getData().size()).isLessThan(c.getUncompressedSize()));
        assertThat(zstd).anySatisfy(c -> assertThat(c.getFileName()).endsWith(".json"));
    }

    @Test
    void withoutTheFeatureNothingIsCompressed() throws Exception {
        List<String> names = manifest.files().stream().map(ManifestFile::name).toList();
        List<Path> paths = new ShardDownloader(stub, Duration.ofSeconds(30), 4096)
                .download(manifest, names, tmp.resolve("without"), null);
        assertThat(paths).hasSize(names.size());
        assertThat(sent).isNotEmpty()
                .allSatisfy(c -> assertThat(c.getCompression()).isEqualTo(ChunkCompression.CHUNK_COMPRESSION_NONE));
    }
}
