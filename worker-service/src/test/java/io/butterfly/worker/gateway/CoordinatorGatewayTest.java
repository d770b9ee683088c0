package io.butterfly.worker.gateway;

import io.butterfly.common.tls.ClusterTls;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.coordinator.v1.HeartbeatAck;
import io.butterfly.proto.coordinator.v1.HeartbeatPing;
import io.butterfly.proto.coordinator.v1.LoadReport;
import io.butterfly.proto.coordinator.v1.LoadReportAck;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.partition.LoadPhase;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Heartbeats reach every coordinator replica; reports fall over to another replica when one is down. */
class CoordinatorGatewayTest {

    /** A coordinator replica that only counts what it receives. */
    static final class FakeReplica extends CoordinatorServiceGrpc.CoordinatorServiceImplBase {
        final AtomicInteger pings = new AtomicInteger();
        final AtomicInteger closedStreams = new AtomicInteger();
        final List<LoadReport> reports = new CopyOnWriteArrayList<>();
        Server server;

        FakeReplica start() throws Exception {
            server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(this).build().start();
            return this;
        }

        Endpoint endpoint(String id) {
            return new Endpoint(id, "127.0.0.1", server.getPort());
        }

        @Override
        public StreamObserver<HeartbeatPing> heartbeatStream(StreamObserver<HeartbeatAck> acks) {
            return new StreamObserver<>() {
                @Override
                public void onNext(HeartbeatPing ping) {
                    pings.incrementAndGet();
                    acks.onNext(HeartbeatAck.newBuilder().setSequence(ping.getSequence()).build());
                }

                @Override
                public void onError(Throwable t) {
                    closedStreams.incrementAndGet();
                }

                @Override
                public void onCompleted() {
                    closedStreams.incrementAndGet();
                    acks.onCompleted();
                }
            };
        }

        /** Reports of epochs below this are refused as a replica refuses a stale report. */
        volatile long refuseBelowEpoch;

        @Override
        public void reportLoad(LoadReport report, StreamObserver<LoadReportAck> response) {
            reports.add(report);
            if (report.getEpoch() < refuseBelowEpoch) {
                response.onError(Status.FAILED_PRECONDITION.withDescription("stale report: epoch "
                        + report.getEpoch()).asRuntimeException());
                return;
            }
            response.onNext(LoadReportAck.getDefaultInstance());
            response.onCompleted();
        }
    }

    private final PeerChannels channels = new PeerChannels(ClusterTls.PLAINTEXT);
    private final List<FakeReplica> replicas = new CopyOnWriteArrayList<>();
    private CoordinatorGateway gateway;

    private FakeReplica replica() throws Exception {
        FakeReplica r = new FakeReplica().start();
        replicas.add(r);
        return r;
    }

    private CoordinatorGateway gateway() {
        gateway = new CoordinatorGateway("worker-7", 50, null, channels);
        gateway.startHeartbeats();
        return gateway;
    }

    /** A download progress report of model "m", epoch 1. */
    private static io.butterfly.worker.partition.LoadReport progress(double progress) {
        return progress(1, progress);
    }

    private static io.butterfly.worker.partition.LoadReport progress(long epoch, double progress) {
        return new io.butterfly.worker.partition.LoadReport("m", epoch, LoadPhase.DOWNLOADING, progress, 0, 0, null, -1,
                false, null, 0, 0, 0, false, null, null, 0);
    }

    @AfterEach
    void stop() throws InterruptedException {
        if (gateway != null) {
            gateway.close();
        }
        channels.close();
        for (FakeReplica r : replicas) {
            r.server.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
        }
    }

    @Test
    void everyReplicaHearsTheHeartbeatsAndADroppedOneIsLetGo() throws Exception {
        FakeReplica a = replica();
        FakeReplica b = replica();
        CoordinatorGateway gateway = gateway();
        gateway.attach(a.endpoint("coordinator-0"), List.of(a.endpoint("coordinator-0"), b.endpoint("coordinator-1")), 1);
        await().atMost(Duration.ofSeconds(10)).until(() -> a.pings.get() >= 5 && b.pings.get() >= 5);
        assertThat(gateway.heartbeatAcks()).containsOnlyKeys("coordinator-0@127.0.0.1:" + a.server.getPort(),
                "coordinator-1@127.0.0.1:" + b.server.getPort());

        // A new assignment names only b: a's stream is closed and a hears nothing more.
        gateway.attach(b.endpoint("coordinator-1"), List.of(), 2);
        await().atMost(Duration.ofSeconds(10)).until(() -> a.closedStreams.get() == 1);
        int heardByA = a.pings.get();
        int heardByB = b.pings.get();
        await().atMost(Duration.ofSeconds(10)).until(() -> b.pings.get() >= heardByB + 5);
        assertThat(a.pings.get()).isEqualTo(heardByA);
    }

    /**
     * Issue 47, item 3 (found by the fault schedule): a worker that holds no stage (a spare, a restarted worker) gets no
     * assignment naming the replicas, so it heartbeated only to the one it was started with; when another replica led,
     * the leader never heard it and it stayed FAILED. Started with every replica, it heartbeats to each at once.
     */
    @Test
    void aWorkerStartedWithEveryReplicaHeartbeatsToEachBeforeAnyAssignment() throws Exception {
        FakeReplica first = replica();
        FakeReplica second = replica();
        FakeReplica third = replica();
        gateway = new CoordinatorGateway("worker-7", 50, first.endpoint("coordinator"),
                List.of(second.endpoint("coordinator-replica"), third.endpoint("coordinator-replica"),
                        first.endpoint("coordinator-replica")), channels, CoordinatorGateway.REPORT_RETRY);
        gateway.startHeartbeats();
        await().atMost(Duration.ofSeconds(10))
                .until(() -> first.pings.get() >= 3 && second.pings.get() >= 3 && third.pings.get() >= 3);
        assertThat(gateway.heartbeatAcks()).hasSize(3);
    }

    @Test
    void anAssignmentEndsTheBackoffOfAStreamToAReplicaThatWasStillStarting() throws Exception {
        CoordinatorGateway gateway = gateway();
        // A first heartbeat stream elsewhere: the first HTTP/2 connection of a fresh JVM loads and runs cold code on
        // both sides (hundreds of ms on a busy machine), which the 700 ms below are not meant to cover.
        FakeReplica warm = replica();
        gateway.attach(warm.endpoint("coordinator-warm"), List.of(), 1);
        await().atMost(Duration.ofSeconds(10)).until(() -> warm.pings.get() >= 1);

        // The replica's port, held until it starts by a socket bound but never listening: connections are refused,
        // and no other process (nor this JVM's own outgoing connections) can take the port meanwhile.
        Socket notYetUp = new Socket();
        notYetUp.bind(new InetSocketAddress("127.0.0.1", 0));
        int port = notYetUp.getLocalPort();
        Endpoint starting = new Endpoint("coordinator-0", "127.0.0.1", port);
        gateway.attach(starting, List.of(), 1);
        Thread.sleep(3_000); // refused again and again: the reconnect backoff reaches its 2 s ceiling

        notYetUp.close(); // released only for the replica, which binds it at once
        FakeReplica up = new FakeReplica();
        up.server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", port)).addService(up).build().start();
        replicas.add(up);
        gateway.attach(starting, List.of(), 1); // what the replica does once it is up
        await().atMost(Duration.ofMillis(700)).until(() -> up.pings.get() >= 1);
    }

    @Test
    void aReportGoesToTheAssigningReplicaAndFallsOverWhenItIsDown() throws Exception {
        FakeReplica a = replica();
        FakeReplica b = replica();
        CoordinatorGateway gateway = gateway();
        gateway.attach(a.endpoint("coordinator-0"), List.of(b.endpoint("coordinator-1")), 1);
        gateway.report(progress(0));
        await().atMost(Duration.ofSeconds(10)).until(() -> a.reports.size() == 1);
        assertThat(a.reports.get(0).getNodeId()).isEqualTo("worker-7");
        assertThat(b.reports).isEmpty();

        a.server.shutdownNow().awaitTermination(2, TimeUnit.SECONDS);
        gateway.report(progress(1.0));
        await().atMost(Duration.ofSeconds(15)).until(() -> b.reports.size() == 1);
    }

    /**
     * A replica's refusal is final: each refused report is sent once, and the next epoch's report behind them goes at
     * once (retried, the refused ones held it back about 3 s each: an audit spare's refused reports delayed a re-plan's
     * READY by 17 s, and under load past a paused request's recovery timeout).
     */
    @Test
    void aRefusedReportIsNotTriedAgainAndDoesNotHoldBackTheNextOne() throws Exception {
        FakeReplica a = replica();
        a.refuseBelowEpoch = 2;
        CoordinatorGateway gateway = gateway();
        gateway.attach(a.endpoint("coordinator-0"), List.of(), 2);
        for (int i = 0; i < 4; i++) {
            gateway.report(progress(1, i / 4.0));
        }
        gateway.report(progress(2, 1.0));
        await().atMost(Duration.ofSeconds(10)).until(() -> a.reports.stream().anyMatch(r -> r.getEpoch() == 2));
        assertThat(a.reports).extracting(LoadReport::getEpoch).containsExactly(1L, 1L, 1L, 1L, 2L);
    }

    @Test
    void onlyFailuresBeforeAReplicaJudgedTheReportAreTriedAgain() {
        assertThat(CoordinatorGateway.undelivered(Status.UNAVAILABLE.asRuntimeException())).isTrue();
        assertThat(CoordinatorGateway.undelivered(Status.DEADLINE_EXCEEDED.asRuntimeException())).isTrue();
        assertThat(CoordinatorGateway.undelivered(Status.FAILED_PRECONDITION.asRuntimeException())).isFalse();
        assertThat(CoordinatorGateway.undelivered(Status.PERMISSION_DENIED.asRuntimeException())).isFalse();
        assertThat(CoordinatorGateway.undelivered(Status.INVALID_ARGUMENT.asRuntimeException())).isFalse();
        assertThat(CoordinatorGateway.undelivered(new IllegalStateException("not a call"))).isFalse();
    }
}
