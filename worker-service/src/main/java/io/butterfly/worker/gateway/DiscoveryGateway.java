package io.butterfly.worker.gateway;

import io.butterfly.common.discovery.DiscoveryMembership;
import io.butterfly.common.error.RetryPolicy;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.butterfly.worker.capability.Capabilities;
import io.grpc.Channel;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * The worker's membership in the cluster: joins through discovery-service with the signed handshake once its
 * capabilities are measured, and keeps the entry fresh ({@link DiscoveryMembership}).
 */
public class DiscoveryGateway {

    /** Optional protocol features this worker implements (docs/bootstrap-protocol.md §7.2): none yet. */
    static final long FEATURES = 0;

    /** This worker as other nodes reach it. */
    public record Self(String nodeId, String host, int grpcPort, int httpPort) {
    }

    private final DiscoveryMembership membership;

    /**
     * @param discovery       channel to discovery-service
     * @param dataDir         where the node's identity key is kept
     * @param heartbeatMillis period of the signed heartbeats that keep the entry fresh
     * @param capabilities    waits for the measurement (called on the membership thread)
     */
    public DiscoveryGateway(Channel discovery, Path dataDir, String clusterName, long heartbeatMillis, Self self,
                            Supplier<Capabilities> capabilities, RetryPolicy joinRetry) {
        this.membership = new DiscoveryMembership(discovery, dataDir, self.nodeId(), clusterName, FEATURES,
                heartbeatMillis, () -> member(self, capabilities.get()), joinRetry);
    }

    private Member member(Self self, Capabilities capabilities) {
        String version = getClass().getPackage().getImplementationVersion();
        return Member.newBuilder()
                .setNodeId(self.nodeId())
                .setRole(NodeRole.WORKER)
                .setHost(self.host())
                .setGrpcPort(self.grpcPort())
                .setHttpPort(self.httpPort())
                .setVersion(version == null ? "dev" : version)
                .setCapabilities(GatewayMessages.capabilities(capabilities))
                .build();
    }

    /** Joins in the background (once the worker is up). */
    public void start() {
        membership.start();
    }

    /** Leaves the cluster (on shutdown). */
    public void close() {
        membership.stop();
    }

    public boolean joined() {
        return membership.joined();
    }

    public String joinError() {
        return membership.joinError();
    }
}
