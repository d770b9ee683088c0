package io.butterfly.worker.cluster;

import ai.djl.Device;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.discovery.SignedDiscoveryClient;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.RetryPolicy;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.discovery.v1.DiscoveryResponse;
import io.butterfly.proto.discovery.v1.JoinReason;
import io.butterfly.proto.discovery.v1.Member;
import io.butterfly.proto.discovery.v1.NodeRole;
import io.butterfly.worker.capability.CapabilityDetector;
import io.butterfly.worker.capability.Devices;
import io.butterfly.worker.config.WorkerProperties;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import jakarta.annotation.PreDestroy;
import java.nio.file.Files;
import java.time.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Component;

/**
 * Joins the cluster through discovery-service once the worker is up: detects capabilities, then runs the
 * signed join handshake (JOIN_REQUEST/RESPONSE/ACK, bootstrap-protocol.md §3.2) with the node's Ed25519
 * identity, kept in its data directory. Retryable refusals (§8.2) are retried with exponential backoff
 * and jitter; afterwards signed heartbeats keep the entry fresh and rejoin if discovery forgot the node.
 */
@Component
public class ClusterMembership {

    private static final Logger log = LoggerFactory.getLogger(ClusterMembership.class);
    /** Optional protocol features this worker implements (bootstrap-protocol.md §7.2): none yet. */
    static final long FEATURES = 0;

    private final WorkerProperties props;
    private final PeerChannels channels;
    private final int grpcPort;
    private final int httpPort;
    private volatile NodeCapabilities capabilities;
    private volatile boolean joined;
    private volatile String joinError;
    private volatile SignedDiscoveryClient client;
    private volatile Thread worker;

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
        Thread t = new Thread(this::run, "cluster-join");
        t.setDaemon(true);
        worker = t;
        t.start();
    }

    private void run() {
        try {
            boolean restart = Files.exists(props.dataDir().resolve("identity.key"));
            NodeIdentity identity = NodeIdentity.loadOrCreate(props.dataDir());
            log.info("node identity {} ({})", identity.publicKeyHex(), restart ? "kept from an earlier start" : "new");
            client = new SignedDiscoveryClient(channels.get(props.discoveryHost(), props.discoveryPort()), identity,
                    props.nodeId(), props.clusterName(), FEATURES, Clock.systemUTC(), new RetryPolicy(200, 5_000));
            Device device = Devices.resolve(props.device());
            capabilities = CapabilityDetector.detect(device, props.dataDir(), props.memoryLimit().toBytes());
            log.info("capabilities: cores={} memory={}MiB gflops={} memory-bandwidth={}GB/s storage={} device={}",
                    capabilities.getCpuCores(), capabilities.getMemoryBytes() >> 20,
                    String.format("%.1f", capabilities.getMeasuredGflops()),
                    String.format("%.1f", capabilities.getMemoryBandwidthGbps()), capabilities.getStorageType(), device);
            if (!join(restart ? JoinReason.REJOIN_AFTER_RESTART : JoinReason.INITIAL_START)) {
                return;
            }
            while (!Thread.currentThread().isInterrupted()) {
                Thread.sleep(props.discoveryHeartbeatMillis());
                heartbeat();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Asks discovery which cluster it serves before joining (bootstrap-protocol.md §3.1). Another cluster is final;
     * an unreachable discovery is left to the join's own retries.
     */
    private boolean discover() {
        try {
            DiscoveryResponse seen = client.discover(capabilities);
            if (!seen.getAccepted()) {
                joinError = "CLUSTER_NAME_MISMATCH: " + seen.getRejectionReason();
                log.error("discovery refused: {}; not joining", seen.getRejectionReason());
                return false;
            }
            log.info("discovered cluster '{}': {} member(s), coordinator {}", seen.getClusterConfig().getClusterName(),
                    seen.getPeerListCount(), seen.getCoordinatorId().isEmpty() ? "(none yet)" : seen.getCoordinatorId());
        } catch (StatusRuntimeException e) {
            log.info("discovery request failed ({}); joining anyway", e.getStatus().getCode());
        } catch (ButterflyException e) {
            joinError = e.code() + ": " + e.getMessage();
            log.error("discovery answer refused: {}; not joining", joinError);
            return false;
        }
        return true;
    }

    private boolean join(JoinReason reason) throws InterruptedException {
        Member self = Member.newBuilder()
                .setRole(NodeRole.WORKER)
                .setHost(props.advertiseHost())
                .setGrpcPort(grpcPort)
                .setHttpPort(httpPort)
                .setVersion(getClass().getPackage().getImplementationVersion() == null ? "dev"
                        : getClass().getPackage().getImplementationVersion())
                .setCapabilities(capabilities)
                .build();
        if (!discover()) {
            return false;
        }
        try {
            client.join(self, reason, why -> {
                joinError = why;
                log.info("join attempt failed ({})", why);
            });
            joined = true;
            joinError = null;
            log.info("joined cluster '{}' as {} ({})", props.clusterName(), props.nodeId(), reason);
            return true;
        } catch (ButterflyException e) {
            joinError = e.code() + ": " + e.getMessage();
            log.error("join refused, not retrying: {}", joinError);
            return false;
        }
    }

    private void heartbeat() throws InterruptedException {
        try {
            client.heartbeat();
        } catch (StatusRuntimeException e) {
            if (e.getStatus().getCode() == Status.Code.NOT_FOUND) {
                log.warn("discovery no longer lists this node ({}); joining again", e.getStatus().getDescription());
                joined = false;
                join(JoinReason.REJOIN_AFTER_FAILURE);
            } else {
                log.debug("discovery heartbeat failed: {}", e.getStatus());
            }
        }
    }

    @PreDestroy
    void leave() {
        Thread t = worker;
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
