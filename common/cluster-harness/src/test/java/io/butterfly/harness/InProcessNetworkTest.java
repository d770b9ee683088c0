package io.butterfly.harness;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.grpc.ClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthCheckResponse;
import io.grpc.health.v1.HealthCheckResponse.ServingStatus;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.protobuf.services.HealthStatusManager;
import io.grpc.stub.StreamObserver;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The harness's network between two nodes, "client" calling "server" (a real gRPC service, the standard health
 * service, in process): calls go through while the link is open; a cut ends them with UNAVAILABLE at once, blocking
 * ones included; a pause holds them, both ways, and delivers what waited in order when it ends.
 */
class InProcessNetworkTest {

    private static final int PORT = 9999;
    private final InProcessNetwork network = new InProcessNetwork();
    private final HealthStatusManager health = new HealthStatusManager();
    private Server server;
    private ManagedChannel channel;

    @BeforeEach
    void serve() throws Exception {
        network.register("server", "127.0.0.1", PORT);
        network.register("client", "127.0.0.1", PORT + 1);
        server = InProcessServerBuilder.forName(InProcessNetwork.serverName("127.0.0.1", PORT))
                .addService(health.getHealthService()).build().start();
        channel = network.dialerFor("client").open("127.0.0.1", PORT);
        health.setStatus("", ServingStatus.SERVING);
    }

    @AfterEach
    void stop() {
        channel.shutdownNow();
        server.shutdownNow();
        network.close();
    }

    @Test
    void anOpenLinkCarriesCalls() {
        assertThat(check().getStatus()).isEqualTo(ServingStatus.SERVING);
    }

    @Test
    void aCutEndsStreamsAndFailsNewCallsAtOnceUntilHealed() throws Exception {
        Watcher watcher = watch();
        watcher.awaitStatuses(1);

        network.isolate("server");

        assertThat(watcher.end.get(5, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThatThrownBy(this::check).isInstanceOfSatisfying(StatusRuntimeException.class,
                e -> assertThat(e.getStatus().getDescription()).contains("client -> server cut"));
        network.open("server");
        assertThat(check().getStatus()).isEqualTo(ServingStatus.SERVING);
    }

    @Test
    void aKilledNodesCallsFailEitherWay() {
        network.down("client");
        assertThatThrownBy(this::check).isInstanceOfSatisfying(StatusRuntimeException.class,
                e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE));
        assertThat(network.reach("client")).isEqualTo(InProcessNetwork.Reach.DOWN);
    }

    @Test
    void aCallWhoseCancelThrowsIsStillEndedAndTheCutGoesOn() throws Exception {
        // grpc-java's in-process stream throws an NPE when cancelled before the server took it up: a cut (and so a
        // cluster's close) must end the call for its caller all the same and never throw
        ClientCall<String, String> racing = new ClientCall<>() {
            @Override
            public void start(Listener<String> responses, Metadata headers) {
            }

            @Override
            public void request(int numMessages) {
            }

            @Override
            public void cancel(String message, Throwable cause) {
                throw new NullPointerException("serverStreamListener is null");
            }

            @Override
            public void halfClose() {
            }

            @Override
            public void sendMessage(String message) {
            }
        };
        GatedCall<String, String> call = new GatedCall<>(racing, network, "client", "server", Runnable::run);
        CompletableFuture<Status> end = new CompletableFuture<>();
        call.start(new ClientCall.Listener<>() {
            @Override
            public void onClose(Status status, Metadata trailers) {
                end.complete(status);
            }
        }, new Metadata());

        network.down("server");

        assertThat(end.get(5, TimeUnit.SECONDS).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    }

    @Test
    void aPauseHoldsCallsBothWaysAndDeliversWhatWaitedInOrder() throws Exception {
        Watcher watcher = watch();
        watcher.awaitStatuses(1);

        network.pause("server");
        CompletableFuture<HealthCheckResponse> held = CompletableFuture.supplyAsync(this::check);
        health.setStatus("", ServingStatus.NOT_SERVING);
        health.setStatus("", ServingStatus.SERVING);
        Thread.sleep(300);
        assertThat(held).as("a call to a paused node waits").isNotDone();
        assertThat(watcher.statuses).as("nothing comes from a paused node").hasSize(1);

        network.open("server");
        assertThat(held.get(5, TimeUnit.SECONDS).getStatus()).isEqualTo(ServingStatus.SERVING);
        watcher.awaitStatuses(3);
        assertThat(watcher.statuses).containsExactly(ServingStatus.SERVING, ServingStatus.NOT_SERVING,
                ServingStatus.SERVING);
        assertThat(watcher.end).isNotDone();
    }

    @Test
    void aChannelThatFoundNoServerReconnectsWhenTheServerStarts() throws Exception {
        int later = PORT + 2;
        network.register("late", "127.0.0.1", later);
        ManagedChannel toLate = network.dialerFor("client").open("127.0.0.1", later);
        Server lateServer = null;
        try {
            var stub = HealthGrpc.newBlockingStub(toLate);
            // no server yet: the channel fails, and grpc-java keeps it failing for its reconnect backoff (1 s on)
            assertThatThrownBy(() -> stub.withDeadlineAfter(10, TimeUnit.SECONDS)
                    .check(HealthCheckRequest.getDefaultInstance()))
                    .isInstanceOfSatisfying(StatusRuntimeException.class,
                            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE));
            lateServer = InProcessServerBuilder.forName(InProcessNetwork.serverName("127.0.0.1", later))
                    .addService(health.getHealthService()).build().start();

            network.serverStarted(InProcessNetwork.serverName("127.0.0.1", later));
            network.serverStarted(InProcessNetwork.serverName("127.0.0.1", later + 1)); // nobody dialled: nothing to do

            // a call that does not wait for ready goes through at once, not after the backoff
            assertThat(stub.withDeadlineAfter(10, TimeUnit.SECONDS).check(HealthCheckRequest.getDefaultInstance())
                    .getStatus()).isEqualTo(ServingStatus.SERVING);
        } finally {
            toLate.shutdownNow();
            if (lateServer != null) {
                lateServer.shutdownNow();
            }
        }
    }

    private HealthCheckResponse check() {
        return HealthGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
                .check(HealthCheckRequest.getDefaultInstance());
    }

    private Watcher watch() {
        Watcher watcher = new Watcher();
        HealthGrpc.newStub(channel).watch(HealthCheckRequest.getDefaultInstance(), watcher);
        return watcher;
    }

    /** A health watch: the statuses it was told, and how it ended. */
    private static final class Watcher implements StreamObserver<HealthCheckResponse> {
        final List<ServingStatus> statuses = new CopyOnWriteArrayList<>();
        final CompletableFuture<Status> end = new CompletableFuture<>();

        @Override
        public void onNext(HealthCheckResponse value) {
            statuses.add(value.getStatus());
        }

        @Override
        public void onError(Throwable t) {
            end.complete(Status.fromThrowable(t));
        }

        @Override
        public void onCompleted() {
            end.complete(Status.OK);
        }

        void awaitStatuses(int n) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (statuses.size() < n && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(statuses).hasSizeGreaterThanOrEqualTo(n);
        }
    }
}
