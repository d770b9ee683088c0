package io.butterfly.registry.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.GrpcErrors;
import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.transfer.ShardDownloader;
import io.butterfly.proto.common.v1.ErrorCode;
import io.butterfly.proto.registry.v1.FetchFileRequest;
import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.proto.registry.v1.WeightFile;
import io.butterfly.registry.TinyModels;
import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.registry.catalog.ModelImporter;
import io.butterfly.registry.store.ModelStore;
import io.grpc.ForwardingServerCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.grpc.server.exception.GrpcExceptionHandlerInterceptor;

/** The registry's FetchFile against the shared ShardDownloader, over an in-process gRPC server. */
class FetchFileTransferTest {

    @TempDir
    Path tmp;

    private Server server;
    private ManagedChannel channel;
    private ModelRegistryGrpc.ModelRegistryBlockingStub stub;
    private ModelManifest manifest;
    private final List<FetchFileRequest> fetches = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws Exception {
        TinyModels.write(tmp.resolve("src/tiny"), TinyModels.llama(true), "F32", 1, 5);
        ModelCatalog catalog = new ModelCatalog(new ModelStore(tmp.resolve("store")), new ModelImporter(Clock.systemUTC()));
        catalog.importModel(tmp.resolve("src/tiny"), null);
        String name = InProcessServerBuilder.generateName();
        // Small chunks so every shard takes several messages.
        server = InProcessServerBuilder.forName(name)
                .addService(ServerInterceptors.intercept(new ModelRegistryGrpcService(catalog, 1000),
                        new GrpcExceptionHandlerInterceptor(new ButterflyGrpcExceptionHandler()), recordFetches()))
                .build().start();
        channel = InProcessChannelBuilder.forName(name).build();
        stub = ModelRegistryGrpc.newBlockingStub(channel);
        manifest = stub.getManifest(GetManifestRequest.newBuilder().setModelId("tiny").build());
    }

    @AfterEach
    void stop() {
        channel.shutdownNow();
        server.shutdownNow();
    }

    @Test
    void downloadsEveryFileVerifiedAndDoesNotFetchPresentFilesAgain() throws Exception {
        List<String> names = manifest.getFilesList().stream().map(WeightFile::getName).toList();
        Path dest = tmp.resolve("dest");
        List<long[]> progress = new ArrayList<>();

        List<Path> paths = new ShardDownloader(stub).download(manifest, names, dest,
                (file, done, total) -> progress.add(new long[]{done, total}));

        assertThat(paths).extracting(p -> p.getFileName().toString()).containsExactlyElementsOf(names);
        for (WeightFile f : manifest.getFilesList()) {
            Path p = dest.resolve(f.getName());
            assertThat(Sha256.hexOfFile(p)).isEqualTo(f.getChecksum());
            assertThat(Files.size(p)).isEqualTo(f.getSizeBytes());
            assertThat(p).hasSameBinaryContentAs(tmp.resolve("store/tiny").resolve(f.getName()));
        }
        assertThat(fetches).hasSize(names.size());
        assertThat(progress).isNotEmpty().allSatisfy(p -> assertThat(p[0]).isLessThanOrEqualTo(p[1]));
        try (Stream<Path> s = Files.list(dest)) {
            assertThat(s.filter(p -> p.toString().endsWith(".part"))).isEmpty();
        }

        fetches.clear();
        List<Path> again = new ShardDownloader(stub).download(manifest, names.subList(2, 5), dest, null);
        assertThat(again).containsExactlyElementsOf(paths.subList(2, 5));
        assertThat(fetches).isEmpty();
    }

    @Test
    void resumesFromAPartialPartFileFetchingOnlyTheRemainder() throws Exception {
        String name = "layer-00001.safetensors";
        Path stored = tmp.resolve("store/tiny").resolve(name);
        byte[] all = Files.readAllBytes(stored);
        int kept = all.length / 2 + 3;
        Path dest = Files.createDirectories(tmp.resolve("dest"));
        Files.write(dest.resolve(name + ".part"), java.util.Arrays.copyOf(all, kept));

        Path p = new ShardDownloader(stub, Duration.ofSeconds(30), 700).download(manifest, List.of(name), dest, null).get(0);

        assertThat(Files.readAllBytes(p)).isEqualTo(all);
        assertThat(fetches).hasSize(1);
        assertThat(fetches.get(0).getOffset()).isEqualTo(kept);
        assertThat(dest.resolve(name + ".part")).doesNotExist();
    }

    @Test
    void aCorruptedStoredFileIsRefusedNamingItAndBothChecksumsAndNothingBadStays() throws Exception {
        String name = "layer-00001.safetensors";
        Path stored = tmp.resolve("store/tiny").resolve(name);
        try (RandomAccessFile raf = new RandomAccessFile(stored.toFile(), "rw")) {
            long at = raf.length() - 5;
            raf.seek(at);
            int b = raf.read();
            raf.seek(at);
            raf.write(b ^ 0x10);
        }
        Path dest = tmp.resolve("dest");

        assertThatThrownBy(() -> new ShardDownloader(stub).download(manifest,
                List.of("config.json", name, "head.safetensors"), dest, null))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH);
                    assertThat(e.getMessage()).contains(name);
                    assertThat(e.getMessage().split("[0-9a-f]{64}", -1).length - 1).isGreaterThanOrEqualTo(2);
                    assertThat(e.getMessage()).contains(manifest.getFiles(4).getChecksum());
                });
        assertThat(dest.resolve(name)).doesNotExist();
        assertThat(dest.resolve(name + ".part")).doesNotExist();
        assertThat(dest.resolve("config.json")).exists();
    }

    @Test
    void unknownModelsFilesAndOffsetsAreRefusedWithTheirCodes() {
        assertThatThrownBy(() -> stub.getManifest(GetManifestRequest.newBuilder().setModelId("nope").build()))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
                    assertThat(GrpcErrors.codeOf(e)).contains(ErrorCode.MANIFEST_NOT_FOUND);
                });
        assertThatThrownBy(() -> stub.fetchFile(FetchFileRequest.newBuilder().setModelId("tiny")
                .setFileName("../manifest.json").build()).hasNext())
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.NOT_FOUND);
                    assertThat(GrpcErrors.codeOf(e)).contains(ErrorCode.WEIGHT_FILE_NOT_FOUND);
                });
        assertThatThrownBy(() -> stub.fetchFile(FetchFileRequest.newBuilder().setModelId("tiny")
                .setFileName("config.json").setOffset(1 << 30).build()).hasNext())
                .isInstanceOfSatisfying(StatusRuntimeException.class,
                        e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT));
        assertThat(stub.listModels(io.butterfly.proto.registry.v1.ListModelsRequest.getDefaultInstance()).getModelsList())
                .extracting(ModelManifest::getModelId).containsExactly("tiny");
    }

    private ServerInterceptor recordFetches() {
        return new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                                ServerCallHandler<Q, R> next) {
                return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(next.startCall(call, headers)) {
                    @Override
                    public void onMessage(Q message) {
                        if (message instanceof FetchFileRequest r) {
                            fetches.add(r);
                        }
                        super.onMessage(message);
                    }
                };
            }
        };
    }
}
