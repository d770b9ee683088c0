package io.butterfly.registry.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.grpc.ManifestMessages;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.common.hash.Sha256;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.transfer.ShardDownloader;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.registry.v1.FetchFileRequest;
import io.butterfly.proto.registry.v1.FileChunk;
import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ModelManifest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.testsupport.InProcessGrpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
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

    private InProcessGrpc registry;
    private ModelRegistryGrpc.ModelRegistryBlockingStub stub;
    private Manifest manifest;
    private final List<FetchFileRequest> fetches = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws Exception {
        ModelCatalog catalog = TransferFixtures.importTiny(tmp, 5);
        // Small chunks so every shard takes several messages.
        registry = InProcessGrpc.serving(ServerInterceptors.intercept(new ModelRegistryGrpcService(catalog, 1000),
                new GrpcExceptionHandlerInterceptor(new ButterflyGrpcExceptionHandler()),
                TransferFixtures.recordRequests(FetchFileRequest.class, fetches)));
        stub = ModelRegistryGrpc.newBlockingStub(registry.channel());
        manifest = ManifestMessages.fromProto(stub.getManifest(GetManifestRequest.newBuilder().setModelId("tiny").build()));
    }

    @AfterEach
    void stop() {
        registry.close();
    }

    @Test
    void aTinyChunkSizeIsRaisedToTheFloor() {
        ManifestFile largest = manifest.files().stream().max(java.util.Comparator.comparingLong(ManifestFile::sizeBytes))
                .orElseThrow();
        assertThat(largest.sizeBytes()).isGreaterThan(ModelRegistryGrpcService.MIN_CHUNK_BYTES);
        List<FileChunk> chunks = new ArrayList<>();
        stub.fetchFile(FetchFileRequest.newBuilder().setModelId("tiny").setFileName(largest.name()).setChunkSize(1)
                .build()).forEachRemaining(chunks::add);
        assertThat(chunks.get(0).getData().size()).isEqualTo(ModelRegistryGrpcService.MIN_CHUNK_BYTES);
        assertThat(chunks.stream().mapToLong(c -> c.getData().size()).sum()).isEqualTo(largest.sizeBytes());
    }

    @Test
    void downloadsEveryFileVerifiedAndDoesNotFetchPresentFilesAgain() throws Exception {
        List<String> names = manifest.files().stream().map(ManifestFile::name).toList();
        Path dest = tmp.resolve("dest");
        List<long[]> progress = new ArrayList<>();

        List<Path> paths = new ShardDownloader(stub).download(manifest, names, dest,
                (file, done, total) -> progress.add(new long[]{done, total}));

        assertThat(paths).extracting(p -> p.getFileName().toString()).containsExactlyElementsOf(names);
        for (ManifestFile f : manifest.files()) {
            Path p = dest.resolve(f.name());
            assertThat(Sha256.hexOfFile(p)).isEqualTo(f.checksum());
            assertThat(Files.size(p)).isEqualTo(f.sizeBytes());
            assertThat(p).hasSameBinaryContentAs(tmp.resolve("store/tiny").resolve(f.name()));
        }
        assertThat(fetches).hasSize(names.size());
        assertThat(progress).isNotEmpty().allSatisfy(p -> assertThat(p[0]).isLessThanOrEqualTo(p[1]));
        // Progress is over all files (fetched in parallel): it never goes back and ends at the sum of their sizes.
        long allBytes = manifest.files().stream().mapToLong(ManifestFile::sizeBytes).sum();
        assertThat(progress.get(progress.size() - 1)).containsExactly(allBytes, allBytes);
        for (int i = 1; i < progress.size(); i++) {
            assertThat(progress.get(i)[0]).isGreaterThanOrEqualTo(progress.get(i - 1)[0]);
        }
        try (Stream<Path> s = Files.list(dest)) {
            assertThat(s.filter(p -> p.toString().endsWith(".part"))).isEmpty();
        }

        fetches.clear();
        List<Path> again = new ShardDownloader(stub).download(manifest, names.subList(2, 5), dest, null);
        assertThat(again).containsExactlyElementsOf(paths.subList(2, 5));
        assertThat(fetches).isEmpty();
    }

    @Test
    void aFileThatFailsEndsTheDownloadAtOnceAndNoFetchOutlivesIt() throws Exception {
        String held = "layer-00000.safetensors";
        String refused = "layer-00001.safetensors";
        CountDownLatch heldCancelled = new CountDownLatch(1);
        // The first file's stream never answers; the second is refused at once (not a retryable status).
        ServerInterceptor gate = new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                              ServerCallHandler<Q, R> next) {
                if (!call.getMethodDescriptor().getFullMethodName().equals(ModelRegistryGrpc.getFetchFileMethod().getFullMethodName())) {
                    return next.startCall(call, headers);
                }
                call.request(1);
                return new ServerCall.Listener<>() {
                    @Override
                    public void onMessage(Q message) {
                        if (((FetchFileRequest) message).getFileName().equals(refused)) {
                            call.close(Status.PERMISSION_DENIED.withDescription("refused for the test"), new Metadata());
                        }
                    }

                    @Override
                    public void onCancel() {
                        heldCancelled.countDown();
                    }
                };
            }
        };
        try (InProcessGrpc gated = InProcessGrpc.serving(
                ServerInterceptors.intercept(new ModelRegistryGrpcService(TransferFixtures.openStore(tmp), 1000), gate))) {
            ShardDownloader downloader = new ShardDownloader(ModelRegistryGrpc.newBlockingStub(gated.channel()),
                    Duration.ofMinutes(5), 1000, ShardDownloader.RetryPolicy.DEFAULT, 2);
            Path dest = tmp.resolve("dest");

            ButterflyException e = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(Duration.ofSeconds(60),
                    () -> org.junit.jupiter.api.Assertions.assertThrows(ButterflyException.class,
                            () -> downloader.download(manifest, List.of(held, refused), dest, null)),
                    "the refused file must end the download while the other one is still streaming");
            assertThat(e.kind()).isEqualTo(ErrorKind.PERMISSION_DENIED);
            // The held stream was cancelled, and its thread ended before download returned: nothing writes any more.
            assertThat(heldCancelled.await(10, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
            for (Thread t : Thread.getAllStackTraces().keySet()) {
                if (t.getName().equals("shard-fetch")) {
                    t.join(5_000); // at most leaving its run method
                    assertThat(t.isAlive()).as("a fetch thread outlived the download").isFalse();
                }
            }
        }
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
                    // Both file checksums named (as stored now, as the manifest says), and the block's.
                    assertThat(e.getMessage()).containsPattern("has sha256 [0-9a-f]{64} but its manifest says [0-9a-f]{64}");
                    assertThat(e.getMessage()).containsPattern("has crc32c [0-9a-f]{8} where its import recorded [0-9a-f]{8}");
                    // Refused by the registry itself (block checksum recorded at import), not forwarded.
                    assertThat(e.getMessage()).contains("registry store corrupted");
                });
        // Not a byte of the corrupted block reaches the client: the stream fails before its first chunk.
        List<FileChunk> received = new java.util.ArrayList<>();
        assertThatThrownBy(() -> stub.fetchFile(FetchFileRequest.newBuilder().setModelId("tiny").setFileName(name)
                .build()).forEachRemaining(received::add))
                .isInstanceOfSatisfying(StatusRuntimeException.class, e -> {
                    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.DATA_LOSS);
                    assertThat(GrpcErrors.codeOf(e)).contains(ErrorCode.CHECKSUM_MISMATCH);
                });
        assertThat(received).isEmpty();
        assertThat(dest.resolve(name)).doesNotExist();
        // A resume point may stay, but it holds no byte of the refused block.
        Path part = dest.resolve(name + ".part");
        assertThat(Files.exists(part) ? Files.size(part) : 0L).isZero();
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

    @Test
    void aChunkCorruptedInTransitIsRefusedAndNeverWritten() throws Exception {
        assertCorruptedInTransit(Integer.MAX_VALUE);
    }

    @Test
    void aChunkCorruptedOnceInTransitIsFetchedAgainResumingAfterTheLastVerifiedChunk() throws Exception {
        assertCorruptedInTransit(1);
    }

    @Test
    void withoutACrc32cTheChunksSha256CatchesTransitCorruption() throws Exception {
        assertCorruptedInTransit(Integer.MAX_VALUE, true);
    }

    private void assertCorruptedInTransit(int corruptStreams) throws Exception {
        assertCorruptedInTransit(corruptStreams, false);
    }

    /**
     * Downloads through a server flipping a bit in the third chunk of its first {@code corruptStreams} streams
     * (and, with {@code dropCrc}, sending no CRC32C, as an older registry would).
     */
    private void assertCorruptedInTransit(int corruptStreams, boolean dropCrc) throws Exception {
        String name = "layer-00001.safetensors";
        ModelCatalog catalog = TransferFixtures.openStore(tmp);
        catalog.loadStored();
        InProcessGrpc flipping = InProcessGrpc.serving(ServerInterceptors.intercept(new ModelRegistryGrpcService(catalog, 1000),
                new GrpcExceptionHandlerInterceptor(new ButterflyGrpcExceptionHandler()),
                flipThirdChunk(new java.util.concurrent.atomic.AtomicInteger(corruptStreams), dropCrc)));
        Path dest = tmp.resolve("dest-transit");
        byte[] original = Files.readAllBytes(tmp.resolve("store/tiny").resolve(name));
        ShardDownloader downloader = new ShardDownloader(ModelRegistryGrpc.newBlockingStub(flipping.channel()), Duration.ofMinutes(1),
                ShardDownloader.DEFAULT_CHUNK_SIZE,
                new ShardDownloader.RetryPolicy(2, 2, Duration.ofMillis(10), Duration.ofMillis(50)));
        try {
            if (corruptStreams > 2) {
                assertThatThrownBy(() -> downloader.download(manifest, List.of(name), dest, null))
                        .isInstanceOfSatisfying(ButterflyException.class, e -> {
                            assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH);
                            assertThat(e.getMessage()).contains(name);
                            // the chunk's checksum as sent and as received
                            assertThat(e.getMessage()).containsPattern(dropCrc
                                    ? "expected sha256 [0-9a-f]{64}, got [0-9a-f]{64}"
                                    : "expected crc32c [0-9a-f]{8}, got [0-9a-f]{8}");
                        });
                assertThat(dest.resolve(name)).doesNotExist();
                // Only verified chunks stay, as the resume point: never a flipped byte.
                Path part = dest.resolve(name + ".part");
                byte[] kept = Files.exists(part) ? Files.readAllBytes(part) : new byte[0];
                assertThat(kept.length).isLessThan(original.length);
                assertThat(kept).isEqualTo(java.util.Arrays.copyOf(original, kept.length));
            } else {
                Path p = downloader.download(manifest, List.of(name), dest, null).get(0);
                assertThat(Files.readAllBytes(p)).isEqualTo(original);
                // Resumed after the two verified chunks: no byte was fetched twice.
                assertThat(downloader.bytesFetched()).isEqualTo(original.length);
            }
        } finally {
            flipping.close();
        }
    }

    @Test
    void aTruncatedStoredFileIsRefusedNamingIt() throws Exception {
        String name = "layer-00000.safetensors";
        Path stored = tmp.resolve("store/tiny").resolve(name);
        try (RandomAccessFile raf = new RandomAccessFile(stored.toFile(), "rw")) {
            raf.setLength(raf.length() - 100);
        }
        Path dest = tmp.resolve("dest-truncated");
        assertThatThrownBy(() -> new ShardDownloader(stub).download(manifest, List.of(name), dest, null))
                .isInstanceOfSatisfying(ButterflyException.class, e -> {
                    assertThat(e.code()).isEqualTo(ErrorCode.CHECKSUM_MISMATCH);
                    assertThat(e.getMessage()).contains(name).contains("shorter on disk");
                });
        assertThat(dest.resolve(name)).doesNotExist();
        Path part = dest.resolve(name + ".part");
        assertThat(Files.exists(part) ? Files.size(part) : 0L).isZero();
    }

    /** Flips one bit in the data of the third chunk of the first streams, leaving its declared hash. */
    private static ServerInterceptor flipThirdChunk(java.util.concurrent.atomic.AtomicInteger corruptStreams, boolean dropCrc) {
        return new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                                ServerCallHandler<Q, R> next) {
                boolean corrupt = corruptStreams.getAndDecrement() > 0;
                ServerCall<Q, R> flipping = new io.grpc.ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                    private int sent;

                    @Override
                    @SuppressWarnings("unchecked")
                    public void sendMessage(R message) {
                        if (dropCrc && message instanceof FileChunk c) {
                            // as an older registry sends it: the chunk's SHA-256 and no CRC32C
                            message = (R) c.toBuilder().clearCrc32C()
                                    .setSha256(io.butterfly.common.hash.Sha256.hex(c.getData().toByteArray())).build();
                        }
                        if (corrupt && message instanceof FileChunk c && sent++ == 2) {
                            byte[] data = c.getData().toByteArray();
                            data[data.length / 2] ^= 0x01;
                            message = (R) c.toBuilder().setData(com.google.protobuf.ByteString.copyFrom(data)).build();
                        }
                        super.sendMessage(message);
                    }
                };
                return next.startCall(flipping, headers);
            }
        };
    }
}
