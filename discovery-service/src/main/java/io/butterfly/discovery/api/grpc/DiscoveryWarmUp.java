package io.butterfly.discovery.api.grpc;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.common.grpc.PeerDialer;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.common.v1.SignedEnvelope;
import io.butterfly.proto.discovery.v1.DiscoveryRequest;
import io.butterfly.proto.discovery.v1.DiscoveryResponse;
import io.grpc.ManagedChannel;
import io.grpc.health.v1.HealthCheckRequest;
import io.grpc.health.v1.HealthGrpc;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.ApplicationListener;
import org.springframework.grpc.server.lifecycle.GrpcServerStartedEvent;

/**
 * Once the gRPC server listens, discovery answers a health check of its own through loopback, then one
 * discovery request of its own, in process, from a throwaway identity: envelope checks, Ed25519 signing
 * and verifying, the membership store and the answer's sealing all run once. A fresh JVM took 2-3 s over
 * its first answer, which the first joining node paid; now that is paid while the nodes are still starting.
 * Read-only (nothing joins), and in process, so it takes no token from the loopback address's join rate limit.
 */
public class DiscoveryWarmUp implements ApplicationListener<GrpcServerStartedEvent> {

    private static final Logger log = LoggerFactory.getLogger(DiscoveryWarmUp.class);

    private final DiscoveryGrpcService service;
    private final String clusterName;
    private final PeerDialer dialer;

    /** @param dialer this node's channels (mutual TLS): the loopback health check pays for the first handshake too */
    public DiscoveryWarmUp(DiscoveryGrpcService service, String clusterName, PeerDialer dialer) {
        this.service = service;
        this.clusterName = clusterName;
        this.dialer = dialer;
    }

    @Override
    public void onApplicationEvent(GrpcServerStartedEvent event) {
        DaemonThreads.start("discovery-warm-up", () -> {
            if (event.getPort() > 0) { // a server in process (tests) has no port and no transport to warm
                warmUpTransport(event.getPort());
            }
            warmUpAnswer();
        });
    }

    /**
     * One standard health check through loopback: the server's transport (a first connection, HTTP/2, the
     * gRPC call path) was most of the cold cost, and the health service has no rate limit to spend.
     */
    private void warmUpTransport(int port) {
        ManagedChannel channel = dialer.open("127.0.0.1", port);
        long started = System.nanoTime();
        try {
            HealthGrpc.newBlockingStub(channel).withDeadlineAfter(10, TimeUnit.SECONDS)
                    .check(HealthCheckRequest.getDefaultInstance());
            log.info("warm-up: answered a health check of its own through loopback in {} ms",
                    (System.nanoTime() - started) / 1_000_000);
        } catch (RuntimeException e) {
            log.warn("warm-up: a health check of its own through loopback failed: {}", e.toString());
        } finally {
            GrpcChannels.close(channel);
        }
    }

    /** The discovery answer itself, in process. */
    private void warmUpAnswer() {
        long started = System.nanoTime();
        try {
            NodeIdentity probe = NodeIdentity.ephemeral();
            DiscoveryRequest request = DiscoveryRequest.newBuilder().setClusterName(clusterName)
                    .setPublicKey(ByteString.copyFrom(probe.publicKey())).build();
            AtomicReference<SignedEnvelope> answer = new AtomicReference<>();
            service.discover(ControlEnvelopes.seal(probe, MessageType.DISCOVERY_REQUEST, "discovery-warm-up", request,
                    System.currentTimeMillis()), new StreamObserver<>() {
                        @Override
                        public void onNext(SignedEnvelope value) {
                            answer.set(value);
                        }

                        @Override
                        public void onError(Throwable t) {
                        }

                        @Override
                        public void onCompleted() {
                        }
                    });
            DiscoveryResponse response = DiscoveryResponse.parseFrom(answer.get().getPayload());
            boolean signed = ControlEnvelopes.verify(answer.get(), response.getDiscoveryPublicKey().toByteArray());
            log.info("warm-up: answered a discovery request of its own in {} ms (signature {})",
                    (System.nanoTime() - started) / 1_000_000, signed ? "valid" : "INVALID");
        } catch (RuntimeException | InvalidProtocolBufferException e) {
            log.warn("warm-up: answering a discovery request of its own failed: {}", e.toString());
        }
    }
}
