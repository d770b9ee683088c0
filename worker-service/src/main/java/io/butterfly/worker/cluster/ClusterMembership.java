package io.butterfly.worker.cluster;

import ai.djl.Device;
import io.butterfly.common.discovery.DiscoveryMembership;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.butterfly.worker.capability.CapabilityDetector;
import io.butterfly.worker.capability.Devices;
import io.butterfly.worker.config.WorkerProperties;
import jakarta.annotation.PreDestroy;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * The worker's membership in the cluster once it is up: detects its capabilities, then joins through
 * discovery-service with the signed handshake and keeps the entry fresh ({@link DiscoveryMembership}).
 */
@Component
public class ClusterMembership {

    private static final Logger log = LoggerFactory.getLogger(ClusterMembership.class);
    /** Optional protocol features this worker implements (bootstrap-protocol.md §7.2): none yet. */
    static final long FEATURES = 0;

    private final WorkerProperties props;
    private final int grpcPort;
    private final int httpPort;
    private final DiscoveryMembership membership;
    private volatile NodeCapabilities capabilities;

    public ClusterMembership(WorkerProperties props, PeerChannels channels,
                             @Value("${spring.grpc.server.port}") int grpcPort,
                             @Value("${server.port}") int httpPort) {
        this.props = props;
        this.grpcPort = grpcPort;
        this.httpPort = httpPort;
        this.membership = new DiscoveryMembership(channels.get(props.discoveryHost(), props.discoveryPort()),
                props.dataDir(), props.nodeId(), props.clusterName(), FEATURES, props.discoveryHeartbeatMillis(),
                this::self);
    }

    @EventListener(ApplicationReadyEvent.class)
    public void joinInBackground() {
        membership.start();
    }

    /** This worker as it joins; capabilities are measured once, on the membership thread. */
    private Member self() {
        if (capabilities == null) {
            Device device = Devices.resolve(props.device());
            capabilities = CapabilityDetector.detect(device, props.dataDir(), props.memoryLimit().toBytes());
            log.info("capabilities: cores={} memory={}MiB gflops={} memory-bandwidth={}GB/s storage={} device={}",
                    capabilities.getCpuCores(), capabilities.getMemoryBytes() >> 20,
                    String.format("%.1f", capabilities.getMeasuredGflops()),
                    String.format("%.1f", capabilities.getMemoryBandwidthGbps()), capabilities.getStorageType(), device);
        }
        return Member.newBuilder()
                .setNodeId(props.nodeId())
                .setRole(NodeRole.WORKER)
                .setHost(props.advertiseHost())
                .setGrpcPort(grpcPort)
                .setHttpPort(httpPort)
                .setVersion(getClass().getPackage().getImplementationVersion() == null ? "dev"
                        : getClass().getPackage().getImplementationVersion())
                .setCapabilities(capabilities)
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

    public NodeCapabilities capabilities() {
        return capabilities;
    }
}
