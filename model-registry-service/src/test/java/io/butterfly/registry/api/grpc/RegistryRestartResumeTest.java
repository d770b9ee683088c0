package io.butterfly.registry.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.grpc.ManifestMessages;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.common.tls.ClusterTls;
import io.butterfly.common.transfer.ShardDownloader;
import io.butterfly.proto.registry.v1.FetchFileRequest;
import io.butterfly.proto.registry.v1.FileChunk;
import io.butterfly.proto.registry.v1.GetManifestRequest;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.registry.catalog.ModelCatalog;
import io.grpc.ForwardingServerCall;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Grpc;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.grpc.server.exception.GrpcExceptionHandlerInterceptor;

/**
 * A registry stopped in the middle of a transfer and started again (a new server over the same store,
 * on the same port, over real TCP): the download completes from the last verified chunk, so the bytes
 * fetched twice are fewer than two chunks.
 */
class RegistryRestartResumeTest {

    private static final int CHUNK = 1000;
    private static final String FILE = "layer-00001.safetensors";

    @TempDir
    Path tmp;

    @Test
    void aRegistryRestartMidTransferResumesFromTheLastVerifiedChunk() throws Exception {
        TransferFixtures.importTiny(tmp, 5);
        byte[] original = Files.readAllBytes(tmp.resolve("store/tiny").resolve(FILE));
        int stopAfterChunks = original.length / CHUNK / 2;
        assertThat(stopAfterChunks).as("the file spans several chunks").isGreaterThanOrEqualTo(3);

        List<FetchFileRequest> fetches = new CopyOnWriteArrayList<>();
        CountDownLatch midTransfer = new CountDownLatch(1);
        Server first = registry(0, fetches, stopAfterChunks, midTransfer);
        int port = first.getPort();
        ManagedChannel channel = GrpcChannels.open("127.0.0.1", port, ClusterTls.PLAINTEXT);
        Server second = null;
        try {
            ModelRegistryGrpc.ModelRegistryBlockingStub stub = ModelRegistryGrpc.newBlockingStub(channel);
            Manifest manifest = ManifestMessages.fromProto(stub.getManifest(GetManifestRequest.newBuilder().setModelId("tiny").build()));
            ShardDownloader downloader = new ShardDownloader(stub, Duration.ofMinutes(1), CHUNK,
                    new ShardDownloader.RetryPolicy(2, 20, Duration.ofMillis(100), Duration.ofMillis(400)));
            Path dest = tmp.resolve("dest");

            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread download = new Thread(() -> {
                try {
                    downloader.download(manifest, List.of(FILE), dest, null);
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            download.start();
            // The registry goes away mid-stream, stays away a moment, and comes back over the same store.
            assertThat(midTransfer.await(30, TimeUnit.SECONDS)).isTrue();
            // ... once the client has the chunks sent so far on disk.
            Path part = dest.resolve(FILE + ".part");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while ((!Files.exists(part) || Files.size(part) < (long) stopAfterChunks * CHUNK) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            first.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            Thread.sleep(300);
            second = registry(port, fetches, Integer.MAX_VALUE, new CountDownLatch(1));
            download.join(TimeUnit.SECONDS.toMillis(60));
            assertThat(download.isAlive()).isFalse();
            assertThat(failure.get()).as("the download survives the restart").isNull();

            assertThat(Files.readAllBytes(dest.resolve(FILE))).isEqualTo(original);
            assertThat(fetches).hasSizeGreaterThanOrEqualTo(2);
            FetchFileRequest resumed = fetches.get(fetches.size() - 1);
            assertThat(resumed.getOffset()).as("the retry starts after the verified chunks, not at zero")
                    .isGreaterThan(0);
            long refetched = downloader.bytesFetched() - original.length;
            assertThat(refetched).as("bytes fetched twice").isLessThan(2L * CHUNK);
        } finally {
            channel.shutdownNow();
            first.shutdownNow();
            if (second != null) {
                second.shutdownNow();
            }
        }
    }

    /** A registry over the stored models; counts the chunks it sends and signals after {@code signalAfter}. */
    private Server registry(int port, List<FetchFileRequest> fetches, int signalAfter, CountDownLatch signal)
            throws Exception {
        ModelCatalog catalog = TransferFixtures.openStore(tmp);
        catalog.loadStored();
        AtomicInteger sent = new AtomicInteger();
        ServerInterceptor observe = new ServerInterceptor() {
            @Override
            public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
                                                                ServerCallHandler<Q, R> next) {
                ServerCall<Q, R> counting = new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
                    @Override
                    public void sendMessage(R message) {
                        super.sendMessage(message);
                        if (message instanceof FileChunk && sent.incrementAndGet() == signalAfter) {
                            signal.countDown();
                            // Slow the stream so the stop lands in the middle of it.
                            try {
                                Thread.sleep(2_000);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        }
                    }
                };
                return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(next.startCall(counting, headers)) {
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
        ServerServiceDefinition service = ServerInterceptors.intercept(new ModelRegistryGrpcService(catalog, CHUNK),
                new GrpcExceptionHandlerInterceptor(new ButterflyGrpcExceptionHandler()), observe);
        // The restarted registry must bind the port the first one released (the client knows no other), and
        // nothing can hold it across the restart: another process may bind it meanwhile, so try a few times.
        for (int attempt = 1; ; attempt++) {
            try {
                return Grpc.newServerBuilderForPort(port, InsecureServerCredentials.create())
                        .addService(service).build().start();
            } catch (IOException e) { // cannot bind
                if (port == 0 || attempt == 5) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }
}
