package io.butterfly.discovery.config;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.grpc.GrpcErrors;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.discovery.DiscoveryApplication;
import io.butterfly.testsupport.Ports;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.common.v1.SignedEnvelope;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.JoinRequest;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;

/**
 * The real Spring application under the {@code prod} profile, on random ports over TCP: trust-on-first-use
 * is off, the trust store comes from typed properties, and the rate limit sees the caller's real address
 * (the interceptor is registered on the real server).
 */
class DiscoveryProdProfileTest {

    @TempDir
    Path dataDir;

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
    void prodProfileAdmitsOnlyTheTrustStoreAndRateLimitsByPeerAddress() {
        NodeIdentity trusted = NodeIdentity.ephemeral();
        AtomicInteger grpcPort = new AtomicInteger();
        // Hazelcast needs its port number up front; started again on another one if that port was taken meanwhile.
        try (ConfigurableApplicationContext ctx = Ports.startOnFreePorts(1, ports ->
                new SpringApplicationBuilder(DiscoveryApplication.class)
                        .profiles("prod")
                        .listeners((ApplicationListener<GrpcServerStartedEvent>) e -> grpcPort.set(e.getPort()))
                        .run("--server.port=0", "--spring.grpc.server.port=0", "--spring.grpc.server.address=127.0.0.1",
                                "--butterfly.discovery.data-dir=" + dataDir,
                                "--butterfly.discovery.hazelcast.port=" + ports.get(0),
                                "--butterfly.discovery.admission.trusted-keys.worker-0=" + trusted.publicKeyHex(),
                                "--butterfly.discovery.admission.join-burst=3",
                                "--butterfly.discovery.admission.joins-per-second=0.1"))) {
            assertFalse(ctx.getBean(DiscoveryProperties.class).admission().trustOnFirstUse(), "prod turns TOFU off");
            ManagedChannel channel = GrpcChannels.open("127.0.0.1", grpcPort.get());
            try {
                var stub = DiscoveryServiceGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS);
                NodeIdentity stranger = NodeIdentity.ephemeral();
                StatusRuntimeException untrusted = assertThrows(StatusRuntimeException.class, () -> stub.join(join(stranger, "worker-9")));
                assertEquals(ErrorCode.INVALID_SIGNATURE, GrpcErrors.codeOf(untrusted).orElseThrow());
                assertEquals(Status.Code.PERMISSION_DENIED, untrusted.getStatus().getCode());

                stub.join(join(trusted, "worker-0"));
                stub.join(join(trusted, "worker-0")); // third attempt from this address: the burst is spent

                StatusRuntimeException limited = assertThrows(StatusRuntimeException.class, () -> stub.join(join(trusted, "worker-0")));
                assertEquals(ErrorCode.JOIN_RATE_LIMITED, GrpcErrors.codeOf(limited).orElseThrow());
                assertTrue(limited.getStatus().getDescription().contains("127.0.0.1"), limited.getStatus().getDescription());
            } finally {
                GrpcChannels.close(channel);
            }
        }
    }
}
