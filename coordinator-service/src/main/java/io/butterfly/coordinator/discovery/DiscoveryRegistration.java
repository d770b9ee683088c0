package io.butterfly.coordinator.discovery;

import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.discovery.SignedDiscoveryClient;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.RetryPolicy;
import io.butterfly.common.grpc.GrpcChannels;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.discovery.v1.JoinReason;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import jakarta.annotation.PreDestroy;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.time.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * The coordinator's membership in discovery: the same signed join handshake as a worker
 * (bootstrap-protocol.md §3.2), with the coordinator's Ed25519 identity from its data directory, then
 * signed heartbeats, and a leave notification on shutdown. Bootstrap does not wait for this: it only
 * reads the worker list, so a refused coordinator is logged and the cluster still forms.
 */
@Component
public class DiscoveryRegistration {

    private static final Logger log = LoggerFactory.getLogger(DiscoveryRegistration.class);
    private static final long HEARTBEAT_MILLIS = 5_000;

    private final CoordinatorProperties props;
    private final int grpcPort;
    private final int httpPort;
    private volatile ManagedChannel channel;
    private volatile SignedDiscoveryClient client;
    private volatile boolean joined;
    private volatile Thread loop;

    public DiscoveryRegistration(CoordinatorProperties props, @Value("${spring.grpc.server.port}") int grpcPort,
                                 @Value("${server.port}") int httpPort) {
        this.props = props;
        this.grpcPort = grpcPort;
        this.httpPort = httpPort;
    }

    @EventListener(ApplicationReadyEvent.class)
    public void registerInBackground() {
        Thread t = new Thread(this::run, "discovery-registration");
        t.setDaemon(true);
        loop = t;
        t.start();
    }

    private void run() {
        try {
            boolean restart = Files.exists(props.dataDir().resolve("identity.key"));
            NodeIdentity identity = NodeIdentity.loadOrCreate(props.dataDir());
            channel = GrpcChannels.open(props.discoveryHost(), props.discoveryPort());
            client = new SignedDiscoveryClient(channel, identity, props.nodeId(), props.clusterName(), 0,
                    Clock.systemUTC(), new RetryPolicy(200, 5_000));
            if (!join(restart ? JoinReason.REJOIN_AFTER_RESTART : JoinReason.INITIAL_START)) {
                return;
            }
            while (!Thread.currentThread().isInterrupted()) {
                Thread.sleep(HEARTBEAT_MILLIS);
                try {
                    client.heartbeat();
                } catch (StatusRuntimeException e) {
                    if (e.getStatus().getCode() == Status.Code.NOT_FOUND) {
                        joined = false;
                        join(JoinReason.REJOIN_AFTER_FAILURE);
                    } else {
                        log.debug("discovery heartbeat failed: {}", e.getStatus());
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private boolean join(JoinReason reason) throws InterruptedException {
        Member self = Member.newBuilder()
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
        try {
            client.join(self, reason, why -> log.info("coordinator join attempt failed ({})", why));
            joined = true;
            log.info("coordinator '{}' joined discovery ({})", props.nodeId(), reason);
            return true;
        } catch (ButterflyException e) {
            log.error("discovery refused the coordinator, not retrying: {} {}", e.code(), e.getMessage());
            return false;
        }
    }

    private static long physicalMemory() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return os.getTotalMemorySize();
        }
        return Runtime.getRuntime().maxMemory();
    }

    public boolean joined() {
        return joined;
    }

    @PreDestroy
    void leave() {
        Thread t = loop;
        if (t != null) {
            t.interrupt();
        }
        if (joined && client != null) {
            try {
                client.leave();
            } catch (StatusRuntimeException e) {
                log.debug("leave failed: {}", e.getStatus());
            }
        }
        if (channel != null) {
            GrpcChannels.close(channel);
        }
    }
}
