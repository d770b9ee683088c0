package io.butterfly.worker.cluster;

import ai.djl.Device;
import io.butterfly.common.error.GrpcErrors;
import io.butterfly.proto.common.v1.ErrorCode;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.discovery.v1.DiscoveryServiceGrpc;
import io.butterfly.proto.discovery.v1.JoinRequest;
import io.butterfly.proto.discovery.v1.LeaveRequest;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.butterfly.worker.capability.CapabilityDetector;
import io.butterfly.worker.config.WorkerProperties;
import io.butterfly.worker.capability.Devices;
import io.grpc.StatusRuntimeException;
import jakarta.annotation.PreDestroy;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * Joins the cluster through discovery-service once the worker is up: detects capabilities, then
 * retries retryable refusals (bootstrap-protocol.md §8.2) with exponential backoff and jitter.
 */
@Component
public class ClusterMembership {

    private static final Logger log = LoggerFactory.getLogger(ClusterMembership.class);
    private static final Set<ErrorCode> RETRYABLE = EnumSet.of(ErrorCode.TIMEOUT, ErrorCode.NO_PEERS_AVAILABLE,
            ErrorCode.JOIN_RATE_LIMITED, ErrorCode.CLUSTER_FULL);
    public static final String PROTOCOL_VERSION = "1.0";

    private final WorkerProperties props;
    private final PeerChannels channels;
    private final int grpcPort;
    private final int httpPort;
    private volatile NodeCapabilities capabilities;
    private volatile boolean joined;
    private volatile String joinError;

    public ClusterMembership(WorkerProperties props, PeerChannels channels,
                             @Value("${spring.grpc.server.port}") int grpcPort,
                             @Value("${server.port}") int httpPort) {
        this.props = props;
        this.channels = channels;
        this.grpcPort = grpcPort;
        this.httpPort = httpPort;
    }

    @EventListener(ApplicationReadyEvent.class)
    public void joinInBackground() {
        Thread t = new Thread(this::join, "cluster-join");
        t.setDaemon(true);
        t.start();
    }

    void join() {
        Device device = Devices.resolve(props.device());
        capabilities = CapabilityDetector.detect(device, props.memoryLimit().toBytes());
        log.info("capabilities: cores={} memory={}MiB gflops={} device={}", capabilities.getCpuCores(),
                capabilities.getMemoryBytes() >> 20, String.format("%.1f", capabilities.getMeasuredGflops()), device);
        JoinRequest request = JoinRequest.newBuilder()
                .setClusterName(props.clusterName())
                .setProtocolVersion(PROTOCOL_VERSION)
                .setMember(Member.newBuilder()
                        .setNodeId(props.nodeId())
                        .setRole(NodeRole.WORKER)
                        .setHost(props.advertiseHost())
                        .setGrpcPort(grpcPort)
                        .setHttpPort(httpPort)
                        .setVersion(getClass().getPackage().getImplementationVersion() == null ? "dev"
                                : getClass().getPackage().getImplementationVersion())
                        .setCapabilities(capabilities))
                .build();
        long backoff = 200;
        for (int attempt = 1; ; attempt++) {
            try {
                DiscoveryServiceGrpc.newBlockingStub(channels.get(props.discoveryHost(), props.discoveryPort()))
                        .withDeadlineAfter(5, TimeUnit.SECONDS)
                        .join(request);
                joined = true;
                joinError = null;
                log.info("joined cluster '{}' as {} (attempt {})", props.clusterName(), props.nodeId(), attempt);
                return;
            } catch (StatusRuntimeException e) {
                ErrorCode code = GrpcErrors.codeOf(e).orElse(ErrorCode.TIMEOUT);
                joinError = code + ": " + e.getStatus().getDescription();
                boolean transport = GrpcErrors.codeOf(e).isEmpty();
                if (!transport && !RETRYABLE.contains(code)) {
                    log.error("join refused, not retrying: {}", joinError);
                    return;
                }
                log.info("join attempt {} failed ({}); retrying in {} ms", attempt, joinError, backoff);
            }
            try {
                Thread.sleep(backoff + ThreadLocalRandom.current().nextLong(backoff / 2 + 1));
            } catch (InterruptedException ie) {
                Thread.currentThread().interrupt();
                return;
            }
            backoff = Math.min(backoff * 2, 5_000);
        }
    }

    @PreDestroy
    void leave() {
        if (joined) {
            try {
                DiscoveryServiceGrpc.newBlockingStub(channels.get(props.discoveryHost(), props.discoveryPort()))
                        .withDeadlineAfter(1, TimeUnit.SECONDS)
                        .leave(LeaveRequest.newBuilder().setNodeId(props.nodeId()).build());
            } catch (StatusRuntimeException e) {
                log.debug("leave failed: {}", e.getStatus());
            }
        }
    }

    public boolean joined() {
        return joined;
    }

    public String joinError() {
        return joinError;
    }

    public NodeCapabilities capabilities() {
        return capabilities;
    }
}
