package io.butterfly.worker.cluster;

import io.butterfly.common.discovery.DiscoveryMembership;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.butterfly.worker.capability.CapabilityProbe;
import io.butterfly.worker.config.WorkerProperties;
import jakarta.annotation.PreDestroy;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * The worker's membership in the cluster once it is up: joins through discovery-service with the signed
 * handshake as soon as its capabilities are measured ({@link CapabilityProbe}, which starts with the
 * context) and keeps the entry fresh ({@link DiscoveryMembership}).
 */
@Component
public class ClusterMembership {

    /** Optional protocol features this worker implements (bootstrap-protocol.md §7.2): none yet. */
    static final long FEATURES = 0;

    private final WorkerProperties props;
    private final int grpcPort;
    private final int httpPort;
    private final DiscoveryMembership membership;
    private final CapabilityProbe capabilities;

    public ClusterMembership(WorkerProperties props, PeerChannels channels, CapabilityProbe capabilities,
                             @Value("${spring.grpc.server.port}") int grpcPort,
                             @Value("${server.port}") int httpPort) {
        this.props = props;
        this.grpcPort = grpcPort;
        this.httpPort = httpPort;
        this.capabilities = capabilities;
        this.membership = new DiscoveryMembership(channels.get(props.discoveryHost(), props.discoveryPort()),
                props.dataDir(), props.nodeId(), props.clusterName(), FEATURES, props.discoveryHeartbeatMillis(),
                this::self);
    }

    @EventListener(ApplicationReadyEvent.class)
    public void joinInBackground() {
        membership.start();
    }

    /** This worker as it joins (on the membership thread, which waits for the measurement). */
    private Member self() {
        return Member.newBuilder()
                .setNodeId(props.nodeId())
                .setRole(NodeRole.WORKER)
                .setHost(props.advertiseHost())
                .setGrpcPort(grpcPort)
                .setHttpPort(httpPort)
                .setVersion(getClass().getPackage().getImplementationVersion() == null ? "dev"
                        : getClass().getPackage().getImplementationVersion())
                .setCapabilities(capabilities.await())
                .build();
    }

    @PreDestroy
    void leave() {
        membership.stop();
    }

    public boolean joined() {
        return membership.joined();
    }

    public String joinError() {
        return membership.joinError();
    }
}
