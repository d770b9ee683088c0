package io.butterfly.registry.api.grpc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.common.transfer.RegistryCircuitBreaker;
import io.butterfly.common.transfer.ShardDownloader;
import io.butterfly.proto.registry.v1.ModelRegistryGrpc;
import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.testsupport.InProcessGrpc;
import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerInterceptors;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.grpc.server.exception.GrpcExceptionHandlerInterceptor;

/** A registry that is down trips the breaker (no more calls while open); once it is back, the download completes. */
class RegistryCircuitBreakerTest {

    private static final String FILE = "layer-00000.safetensors";

    @TempDir
    Path tmp;

    @Test
    void anUnreachableRegistryOpensTheBreakerAndTheDownloadCompletesOnceItIsBack() throws Exception {
        ModelCatalog catalog = TransferFixtures.importTiny(tmp, 2);
        Manifest manifest = catalog.get("tiny");
        byte[] original = Files.readAllBytes(tmp.resolve("store/tiny").resolve(FILE));

        // Not InProcessGrpc: the registry must be absent at first and appear later under the name the client dials.
        String name = InProcessServerBuilder.generateName();
        AtomicInteger calls = new AtomicInteger();
        ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
        Channel counted = ClientInterceptors.intercept(channel, new ClientInterceptor() {
            @Override
            public <Q, R> ClientCall<Q, R> interceptCall(MethodDescriptor<Q, R> method, CallOptions options, Channel next) {
                calls.incrementAndGet();
                return next.newCall(method, options);
            }
        });
        CircuitBreaker breaker = RegistryCircuitBreaker.create("registry", 3, Duration.ofSeconds(2));
        ShardDownloader downloader = new ShardDownloader(ModelRegistryGrpc.newBlockingStub(counted),
                Duration.ofSeconds(30), 1000, new ShardDownloader.RetryPolicy(0, 40, Duration.ofMillis(40),
                Duration.ofMillis(80))).withCircuitBreaker(breaker);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread download = new Thread(() -> {
            try {
                downloader.download(manifest, List.of(FILE), tmp.resolve("dest"), null);
            } catch (Throwable e) {
                failure.set(e);
            }
        });
        Server server = null;
        try {
            download.start();
            // No registry yet: three calls fail, then the breaker stops further calls while it is open.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (breaker.getState() != CircuitBreaker.State.OPEN && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(breaker.getState()).isEqualTo(CircuitBreaker.State.OPEN);
            int callsWhenOpened = calls.get();
            assertThat(callsWhenOpened).isEqualTo(3);
            Thread.sleep(400); // several backoffs, all inside the open period
            assertThat(calls.get()).as("no call while the breaker is open").isEqualTo(callsWhenOpened);

            server = InProcessServerBuilder.forName(name)
                    .addService(ServerInterceptors.intercept(new ModelRegistryGrpcService(catalog, 1000),
                            new GrpcExceptionHandlerInterceptor(new ButterflyGrpcExceptionHandler())))
                    .build().start();
            download.join(TimeUnit.SECONDS.toMillis(20));
            assertThat(download.isAlive()).isFalse();
            assertThat(failure.get()).isNull();
            assertThat(Files.readAllBytes(tmp.resolve("dest").resolve(FILE))).isEqualTo(original);
            assertThat(breaker.getState()).isEqualTo(CircuitBreaker.State.CLOSED);
        } finally {
            channel.shutdownNow();
            if (server != null) {
                server.shutdownNow();
            }
        }
    }

    @Test
    void aLocalFailureHandsTheHalfOpenProbeBackInsteadOfBlockingTheBreakerForEver() throws Exception {
        ModelCatalog catalog = TransferFixtures.importTiny(tmp, 2);
        Manifest manifest = catalog.get("tiny");
        try (InProcessGrpc registry = InProcessGrpc.serving(ServerInterceptors.intercept(
                new ModelRegistryGrpcService(catalog, 1000), new GrpcExceptionHandlerInterceptor(new ButterflyGrpcExceptionHandler())))) {
            CircuitBreaker breaker = RegistryCircuitBreaker.create("registry", 3, Duration.ofSeconds(60));
            breaker.transitionToOpenState();
            breaker.transitionToHalfOpenState(); // one probe call allowed
            ShardDownloader downloader = new ShardDownloader(ModelRegistryGrpc.newBlockingStub(registry.channel()),
                    Duration.ofSeconds(30), 1000, ShardDownloader.RetryPolicy.DEFAULT).withCircuitBreaker(breaker);

            // A failure on this side while the probe call streams (here the progress callback; a full disk
            // alike): not the registry's fault, and not an outcome of the probe either.
            assertThatThrownBy(() -> downloader.download(manifest, List.of(FILE), tmp.resolve("dest"), (f, done, total) -> {
                throw new IllegalStateException("local failure");
            })).hasMessage("local failure");

            assertThat(breaker.getState()).isEqualTo(CircuitBreaker.State.HALF_OPEN);
            assertThat(breaker.tryAcquirePermission()).as("the probe permission was handed back").isTrue();
        }
    }
}
