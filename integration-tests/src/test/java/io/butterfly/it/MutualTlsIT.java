package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.google.protobuf.ByteString;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.common.pki.ClusterCa;
import io.butterfly.common.pki.NodeCertificate;
import io.butterfly.common.tls.ClusterTls;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import io.butterfly.proto.coordinator.v1.HeartbeatAck;
import io.butterfly.proto.coordinator.v1.HeartbeatPing;
import io.butterfly.proto.coordinator.v1.HeartbeatRequest;
import io.butterfly.proto.coordinator.v1.LoadPhase;
import io.butterfly.proto.coordinator.v1.LoadReport;
import io.butterfly.proto.discovery.v1.DiscoveryHeartbeat;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.JoinRequest;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.ChecksumRequest;
import io.butterfly.proto.worker.v1.ReleaseRequest;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import io.grpc.CallOptions;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Mutual TLS on every gRPC port of a running cluster of processes (discovery, the registry, both workers, the
 * coordinator and its Raft port), and the suite's end-to-end smoke test across processes: the cluster answers as the
 * whole model does in one process. While the honest cluster serves, a client with no certificate, with one from another CA, with an
 * expired one, and a plaintext client are refused on each; a certificate from the cluster's own CA that names another
 * node is refused for every call that speaks for a node (and a worker's for Raft); a worker keeps being forged
 * heartbeats for after it is killed, and still goes FAILED (and the coordinator's log says so with the transition's
 * key-values).
 */
class MutualTlsIT {

    private static final List<String> LOOPBACK = List.of("127.0.0.1", "localhost");
    /** A method no service has: a server that let the client in answers UNIMPLEMENTED, one that did not, nothing. */
    private static final MethodDescriptor<byte[], byte[]> PROBE = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("butterfly.test.v1.Probe/Probe")
            .setRequestMarshaller(Bytes.INSTANCE).setResponseMarshaller(Bytes.INSTANCE).build();

    @TempDir
    Path work;

    @Test
    void everyPortRefusesStrangersAndEveryNodeScopedCallNeedsItsNode() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        try (LocalCluster cluster = new LocalCluster(work)) {
            cluster.startAll(model, 2);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString())
                    && "OPEN".equals(node(s, "worker-0").path("heartbeat_stream").asString()), Duration.ofMinutes(6));
            assertThat(infer(cluster)).as("the honest cluster serves over mutual TLS").isEqualTo(200);
            answersAsTheWholeModel(cluster, model);

            ClusterCa ca = cluster.certificates().ca();
            Map<String, Integer> ports = new LinkedHashMap<>();
            ports.put("discovery", cluster.discoveryGrpc);
            ports.put("registry", cluster.registryGrpc);
            ports.put("worker-0", cluster.grpcPort("worker-0"));
            ports.put("worker-1", cluster.grpcPort("worker-1"));
            ports.put("coordinator", cluster.coordinatorGrpc);
            ports.put("coordinator raft", cluster.coordinatorRaft);

            ClusterTls coordinator = ca.issue(new PeerIdentity(NodeRole.COORDINATOR, "coordinator-9"), LOOPBACK,
                    Duration.ofDays(1)).tls();
            NodeCertificate foreign = ClusterCa.create("another CA", Duration.ofDays(1))
                    .issue(new PeerIdentity(NodeRole.COORDINATOR, "coordinator-0"), LOOPBACK, Duration.ofDays(1));
            NodeCertificate expired = ca.issue(new PeerIdentity(NodeRole.COORDINATOR, "coordinator-0"), LOOPBACK,
                    Instant.now().minus(Duration.ofDays(2)), Instant.now().minus(Duration.ofDays(1)));
            Map<String, ChannelCredentials> strangers = new LinkedHashMap<>();
            strangers.put("no certificate", TlsChannelCredentials.newBuilder().trustManager(cluster.certificates()
                    .directory(new PeerIdentity(NodeRole.WORKER, "worker-0")).resolve("ca.crt").toFile()).build());
            strangers.put("another CA's certificate", trustingTheCluster(foreign, ca));
            strangers.put("an expired certificate", trustingTheCluster(expired, ca));
            strangers.put("plaintext", GrpcChannels.credentials(ClusterTls.PLAINTEXT));

            for (Map.Entry<String, Integer> port : ports.entrySet()) {
                assertThat(probe(port.getValue(), GrpcChannels.credentials(coordinator))).as(port.getKey() + ": a coordinator's certificate is let in")
                        .isEqualTo(Status.Code.UNIMPLEMENTED);
                strangers.forEach((who, tls) -> assertThat(probe(port.getValue(), tls))
                        .as(port.getKey() + " refuses a client with " + who).isEqualTo(Status.Code.UNAVAILABLE));
            }
            ClusterTls worker1 = ca.issue(new PeerIdentity(NodeRole.WORKER, "worker-1"), LOOPBACK, Duration.ofDays(1)).tls();
            assertThat(probe(cluster.coordinatorRaft, GrpcChannels.credentials(worker1))).as("Raft takes coordinators only")
                    .isEqualTo(Status.Code.UNAVAILABLE);

            // A certificate of the cluster's own CA, naming worker-1, for calls that speak for another node.
            ManagedChannel toCoordinator = GrpcChannels.open("127.0.0.1", cluster.coordinatorGrpc, worker1);
            ManagedChannel toWorker0 = GrpcChannels.open("127.0.0.1", cluster.grpcPort("worker-0"), worker1);
            ManagedChannel toDiscovery = GrpcChannels.open("127.0.0.1", cluster.discoveryGrpc, worker1);
            try {
                var coordinatorStub = CoordinatorServiceGrpc.newBlockingStub(toCoordinator).withDeadlineAfter(10, TimeUnit.SECONDS);
                denied(() -> coordinatorStub.heartbeat(HeartbeatRequest.newBuilder().setNodeId("worker-0").build()));
                denied(() -> coordinatorStub.reportLoad(LoadReport.newBuilder().setNodeId("worker-0").setEpoch(1)
                        .setPhase(LoadPhase.FAILED).setErrorMessage("forged").build()));
                var workerStub = WorkerServiceGrpc.newBlockingStub(toWorker0).withDeadlineAfter(10, TimeUnit.SECONDS);
                denied(() -> workerStub.assignPartition(AssignPartitionRequest.newBuilder().setModelId("tiny-llama")
                        .setEpoch(99).build()));
                denied(() -> workerStub.reportChecksums(ChecksumRequest.newBuilder().setEpoch(1).build()));
                ClusterTls registry = ca.issue(new PeerIdentity(NodeRole.REGISTRY, "registry-0"), LOOPBACK,
                        Duration.ofDays(1)).tls();
                ManagedChannel fromRegistry = GrpcChannels.open("127.0.0.1", cluster.grpcPort("worker-0"), registry);
                try {
                    denied(() -> WorkerServiceGrpc.newBlockingStub(fromRegistry).withDeadlineAfter(10, TimeUnit.SECONDS)
                            .release(ReleaseRequest.newBuilder().addSequenceIds("t").build()));
                } finally {
                    GrpcChannels.close(fromRegistry);
                }
                var discoveryStub = DiscoveryServiceGrpc.newBlockingStub(toDiscovery).withDeadlineAfter(10, TimeUnit.SECONDS);
                NodeIdentity key = NodeIdentity.ephemeral();
                denied(() -> discoveryStub.join(ControlEnvelopes.seal(key, MessageType.JOIN_REQUEST, "worker-0",
                        JoinRequest.newBuilder().setClusterName("butterfly").setPublicKey(ByteString.copyFrom(key.publicKey()))
                                .setMember(Member.newBuilder().setNodeId("worker-0")
                                        .setRole(io.butterfly.proto.discovery.v1.NodeRole.WORKER)
                                        .setHost("127.0.0.1").setGrpcPort(1)).build(), System.currentTimeMillis())));
                denied(() -> discoveryStub.heartbeat(ControlEnvelopes.seal(key, MessageType.HEARTBEAT, "worker-0",
                        DiscoveryHeartbeat.newBuilder().setNodeId("worker-0").build(), System.currentTimeMillis())));
                assertThat(infer(cluster)).as("nothing forged reached the cluster").isEqualTo(200);
                assertThat(node(cluster.get("/api/v1/system/state").json(), "worker-0").path("state").asString())
                        .isEqualTo("READY");

                // worker-0 dies while worker-1's certificate keeps heartbeating for it: it still goes FAILED.
                AtomicBoolean forging = new AtomicBoolean(true);
                AtomicInteger refused = new AtomicInteger();
                AtomicInteger acked = new AtomicInteger();
                CompletableFuture<Void> forger = CompletableFuture.runAsync(
                        () -> forgeHeartbeats(toCoordinator, forging, refused, acked));
                Thread.sleep(500);
                cluster.kill("worker-0");
                JsonNode failed = cluster.awaitState(s -> "FAILED".equals(node(s, "worker-0").path("state").asString()),
                        Duration.ofSeconds(20));
                forging.set(false);
                forger.get(20, TimeUnit.SECONDS);
                assertThat(failed.path("system_state").asString()).isEqualTo("DEGRADED");
                assertThat(acked.get()).as("forged heartbeats acknowledged").isZero();
                assertThat(refused.get()).as("forged heartbeat streams refused").isGreaterThan(5);
                // The coordinator process logs the transition with its key-values after the message, in plain text
                // (its default logging configuration, which only a process of its own has).
                assertThat(awaitLogLine(cluster, "coordinator", "worker worker-0 SUSPECT -> FAILED on "))
                        .contains("[machine=worker entity_id=worker-0 from=SUSPECT to=FAILED trigger=NodeFailed epoch=")
                        .containsPattern("epoch=\\d+ log_index=\\d+\\]$");
            } finally {
                GrpcChannels.close(toCoordinator);
                GrpcChannels.close(toWorker0);
                GrpcChannels.close(toDiscovery);
            }
        }
    }

    /** The first line of {@code service}'s log containing {@code text}, waiting up to 30 s for it; null if none. */
    private static String awaitLogLine(LocalCluster cluster, String service, String text) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            String line = cluster.logTail(service, 400).stream().filter(l -> l.contains(text)).findFirst().orElse(null);
            if (line != null) {
                return line;
            }
            Thread.sleep(200);
        }
        return null;
    }

    /** Heartbeat streams for worker-0, one after another, each refused at its first ping, until told to stop. */
    private static void forgeHeartbeats(ManagedChannel channel, AtomicBoolean forging, AtomicInteger refused,
                                        AtomicInteger acked) {
        long sequence = 0;
        while (forging.get()) {
            CompletableFuture<Status> ended = new CompletableFuture<>();
            StreamObserver<HeartbeatPing> pings = CoordinatorServiceGrpc.newStub(channel).heartbeatStream(new StreamObserver<>() {
                @Override
                public void onNext(HeartbeatAck ack) {
                    acked.incrementAndGet();
                }

                @Override
                public void onError(Throwable t) {
                    ended.complete(Status.fromThrowable(t));
                }

                @Override
                public void onCompleted() {
                    ended.complete(Status.OK);
                }
            });
            pings.onNext(HeartbeatPing.newBuilder().setNodeId("worker-0").setEpoch(1).setSequence(++sequence)
                    .setSentAtMs(System.currentTimeMillis()).setLoadedEpoch(1).build());
            try {
                if (ended.get(10, TimeUnit.SECONDS).getCode() == Status.Code.PERMISSION_DENIED) {
                    refused.incrementAndGet();
                }
                Thread.sleep(100);
            } catch (Exception e) {
                throw new IllegalStateException("a forged heartbeat stream was neither refused nor closed", e);
            }
        }
    }

    /** The call is refused as speaking for another node: PERMISSION_DENIED with the protocol's code. */
    private static void denied(Executable call) {
        StatusRuntimeException e = assertThrows(StatusRuntimeException.class, call);
        assertThat(e.getStatus().getCode()).as(e.toString()).isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(GrpcErrors.codeOf(e)).contains(ErrorCode.INVALID_SIGNATURE);
        assertThat(GrpcErrors.errorInfo(e).orElseThrow().getMetadataOrThrow("check")).isEqualTo("peer_identity");
    }

    /** What a server answers a call to a method it does not have: UNIMPLEMENTED once it let the client in. */
    private static Status.Code probe(int port, ChannelCredentials credentials) {
        ManagedChannel channel = Grpc.newChannelBuilderForAddress("127.0.0.1", port, credentials).build();
        try {
            ClientCalls.blockingUnaryCall(channel, PROBE, CallOptions.DEFAULT.withDeadlineAfter(10, TimeUnit.SECONDS),
                    new byte[0]);
            return Status.Code.OK;
        } catch (StatusRuntimeException e) {
            return e.getStatus().getCode();
        } finally {
            GrpcChannels.close(channel);
        }
    }

    /** A client that trusts the cluster's CA but shows {@code cert}, which the cluster's CA may not have issued. */
    private static ChannelCredentials trustingTheCluster(NodeCertificate cert, ClusterCa clusterCa) {
        return GrpcChannels.credentials(ClusterTls.of(cert.key(), List.of(cert.certificate()),
                List.of(clusterCa.certificate())));
    }

    /**
     * The suite's end-to-end smoke test across processes (the other cluster tests run in one JVM): services started as
     * {@code ./butterfly up} starts them, each in its own JVM, over mutual TLS on real sockets, answer a greedy and a
     * seeded request with the tokens and logprobs of the whole model in one process.
     */
    private static void answersAsTheWholeModel(LocalCluster cluster, Path model) throws Exception {
        long[] prompt = {1, 17, 230, 5, 99, 311};
        for (SamplingParams params : List.of(new SamplingParams(0.0, 1.0, 0, 1L, 1),
                new SamplingParams(0.9, 0.95, 0, 42L, 1))) {
            LocalCluster.Reply r = cluster.post("/api/v1/inference", ("{\"token_ids\": [1, 17, 230, 5, 99, 311], "
                    + "\"max_tokens\": 8, \"temperature\": %s, \"top_p\": %s, \"seed\": %d, \"logprobs\": 1}")
                    .formatted(params.temperature(), params.topP(), params.seed()));
            assertThat(r.status()).as(r.body()).isEqualTo(200);
            SingleProcessReference.Generation expected = SingleProcessReference.generate(model, prompt, 8, params);
            List<Long> tokens = new java.util.ArrayList<>();
            r.json().path("token_ids").forEach(n -> tokens.add(n.asLong()));
            List<Double> logprobs = new java.util.ArrayList<>();
            r.json().path("token_logprobs").forEach(n -> logprobs.add(n.asDouble()));
            assertThat(tokens).as("tokens at temperature %s", params.temperature()).isEqualTo(expected.tokens());
            assertThat(logprobs).isEqualTo(expected.logprobs());
        }
    }

    private static int infer(LocalCluster cluster) throws Exception {
        return cluster.post("/api/v1/inference", "{\"prompt\": \"hi\", \"max_tokens\": 2}").status();
    }

    private static JsonNode node(JsonNode state, String id) {
        for (JsonNode n : state.path("nodes")) {
            if (id.equals(n.path("id").asString())) {
                return n;
            }
        }
        return LocalCluster.JSON.createObjectNode();
    }

    private enum Bytes implements MethodDescriptor.Marshaller<byte[]> {
        INSTANCE;

        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
