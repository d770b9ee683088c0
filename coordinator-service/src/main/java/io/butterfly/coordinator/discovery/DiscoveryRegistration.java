package io.butterfly.coordinator.discovery;

import io.butterfly.common.discovery.DiscoveryMembership;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.grpc.ManagedChannel;
import jakarta.annotation.PreDestroy;
import java.lang.management.ManagementFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * The coordinator's membership in discovery: the same signed handshake, heartbeats and leave as a worker
 * ({@link DiscoveryMembership}). Bootstrap does not wait for it: it only reads the worker list, so a refused
 * coordinator is logged and the cluster still forms.
 */
@Component
public class DiscoveryRegistration {

    private static final long HEARTBEAT_MILLIS = 5_000;

    private final ManagedChannel channel;
    private final DiscoveryMembership membership;

    public DiscoveryRegistration(CoordinatorProperties props, @Value("${spring.grpc.server.port}") int grpcPort,
                                 @Value("${server.port}") int httpPort) {
        this.channel = GrpcChannels.open(props.discoveryHost(), props.discoveryPort());
        Member self = Member.newBuilder()
                .setNodeId(props.nodeId())
                .setRole(NodeRole.COORDINATOR)
                .setHost(props.advertiseHost())
                .setGrpcPort(grpcPort)
                .setHttpPort(httpPort)
                .setVersion(getClass().getPackage().getImplementationVersion() == null ? "dev"
                        : getClass().getPackage().getImplementationVersion())
                .setCapabilities(NodeCapabilities.newBuilder()
                        .setCpuCores(Runtime.getRuntime().availableProcessors())
                        .setMemoryBytes(physicalMemory())
                        .setDevice("cpu()"))
                .build();
        this.membership = new DiscoveryMembership(channel, props.dataDir(), props.nodeId(), props.clusterName(), 0,
                HEARTBEAT_MILLIS, () -> self);
    }

    @EventListener(ApplicationReadyEvent.class)
    public void registerInBackground() {
        membership.start();
    }

    private static long physicalMemory() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getTotalMemorySize();
        }
        return Runtime.getRuntime().maxMemory();
    }

    public boolean joined() {
        return membership.joined();
    }

    @PreDestroy
    void leave() {
        membership.stop();
        GrpcChannels.close(channel);
    }
}
