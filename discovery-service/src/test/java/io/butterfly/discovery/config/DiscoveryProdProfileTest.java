package io.butterfly.discovery.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.pki.ClusterCa;
import io.butterfly.common.tls.ClusterTls;
import io.butterfly.discovery.DiscoveryApplication;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.common.v1.SignedEnvelope;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.JoinRequest;
import io.butterfly.proto.discovery.v1.ListMembersRequest;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.butterfly.testsupport.Ports;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;

/**
 * The real Spring application under the {@code prod} profile, with mutual TLS (the default), on random ports over
 * TCP: trust-on-first-use is off, so a node joins when the trust store holds its key or its certificate from the
 * cluster CA names it, and only as that node; a plaintext client is refused; the rate limit sees the caller's real
 * address (the interceptor is registered on the real server).
 */
class DiscoveryProdProfileTest {

    @TempDir
    Path dir;

    private static SignedEnvelope join(NodeIdentity id, String nodeId) {
        JoinRequest request = JoinRequest.newBuilder()
                .setClusterName("butterfly")
                .setMember(Member.newBuilder().setNodeId(nodeId).setRole(NodeRole.WORKER).setHost("127.0.0.1").setGrpcPort(9999)
                        .setCapabilities(NodeCapabilities.newBuilder().setCpuCores(4).setMemoryBytes(8L << 30).setMeasuredGflops(50)))
                .setPublicKey(ByteString.copyFrom(id.publicKey()))
                .build();
        return ControlEnvelopes.seal(id, MessageType.JOIN_REQUEST, nodeId, request, System.currentTimeMillis());
    }

    @Test
    void prodProfileAdmitsTheTrustStoreAndCertifiedNodesOverMutualTlsAndRateLimitsByPeerAddress() throws Exception {
        ClusterCa ca = ClusterCa.create("test CA", Duration.ofDays(1));
        List<String> loopback = List.of("127.0.0.1", "localhost");
        ca.issue(new PeerIdentity(io.butterfly.common.identity.NodeRole.DISCOVERY, "discovery-0"), loopback,
                Duration.ofDays(1)).writeTo(dir.resolve("tls"));
        Function<String, ClusterTls> worker = id -> ca.issue(
                new PeerIdentity(io.butterfly.common.identity.NodeRole.WORKER, id), loopback, Duration.ofDays(1)).tls();
        NodeIdentity trusted = NodeIdentity.ephemeral();
        AtomicInteger grpcPort = new AtomicInteger();
        // Hazelcast needs its port number up front; started again on another one if that port was taken meanwhile.
        try (ConfigurableApplicationContext ctx = Ports.startOnFreePorts(1, ports ->
                new SpringApplicationBuilder(DiscoveryApplication.class)
                        .profiles("prod")
                        .listeners((ApplicationListener<GrpcServerStartedEvent>) e -> grpcPort.set(e.getPort()))
                        .run("--server.port=0", "--spring.grpc.server.port=0", "--spring.grpc.server.address=127.0.0.1",
                                "--butterfly.tls.dir=" + dir.resolve("tls"),
                                "--butterfly.discovery.data-dir=" + dir.resolve("data"),
                                "--butterfly.discovery.hazelcast.port=" + ports.get(0),
                                "--butterfly.discovery.admission.trusted-keys.worker-0=" + trusted.publicKeyHex(),
                                "--butterfly.discovery.admission.join-burst=4",
                                "--butterfly.discovery.admission.joins-per-second=0.1"))) {
            assertFalse(ctx.getBean(DiscoveryProperties.class).admission().trustOnFirstUse(), "prod turns TOFU off");
            ManagedChannel asWorker0 = GrpcChannels.open("127.0.0.1", grpcPort.get(), worker.apply("worker-0"));
            ManagedChannel asWorker1 = GrpcChannels.open("127.0.0.1", grpcPort.get(), worker.apply("worker-1"));
            ManagedChannel plaintext = GrpcChannels.open("127.0.0.1", grpcPort.get(), ClusterTls.PLAINTEXT);
            try {
                StatusRuntimeException refused = assertThrows(StatusRuntimeException.class, () -> stub(plaintext)
                        .listMembers(ListMembersRequest.getDefaultInstance()));
                assertEquals(Status.Code.UNAVAILABLE, refused.getStatus().getCode(), "a plaintext client gets no answer");

                stub(asWorker0).join(join(trusted, "worker-0"));
                StatusRuntimeException untrusted = assertThrows(StatusRuntimeException.class,
                        () -> stub(asWorker0).join(join(NodeIdentity.ephemeral(), "worker-0")));
                assertEquals(ErrorCode.INVALID_SIGNATURE, GrpcErrors.codeOf(untrusted).orElseThrow());
                assertEquals(Status.Code.PERMISSION_DENIED, untrusted.getStatus().getCode());
                assertEquals("untrusted_key", GrpcErrors.errorInfo(untrusted).orElseThrow().getMetadataOrThrow("check"));

                // not in the trust store, but the cluster CA names it: the CA vouches for the id, its key is pinned
                stub(asWorker1).join(join(NodeIdentity.ephemeral(), "worker-1"));
                StatusRuntimeException impostor = assertThrows(StatusRuntimeException.class,
                        () -> stub(asWorker1).join(join(NodeIdentity.ephemeral(), "worker-2")));
                assertEquals(Status.Code.PERMISSION_DENIED, impostor.getStatus().getCode());
                assertEquals("peer_identity", GrpcErrors.errorInfo(impostor).orElseThrow().getMetadataOrThrow("check"));

                // the fifth attempt from this address: the burst is spent
                StatusRuntimeException limited = assertThrows(StatusRuntimeException.class,
                        () -> stub(asWorker0).join(join(trusted, "worker-0")));
                assertEquals(ErrorCode.JOIN_RATE_LIMITED, GrpcErrors.codeOf(limited).orElseThrow());
                assertTrue(limited.getStatus().getDescription().contains("127.0.0.1"), limited.getStatus().getDescription());
            } finally {
                GrpcChannels.close(asWorker0);
                GrpcChannels.close(asWorker1);
                GrpcChannels.close(plaintext);
            }
        }
    }

    private static DiscoveryServiceGrpc.DiscoveryServiceBlockingStub stub(ManagedChannel channel) {
        return DiscoveryServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
    }
}
