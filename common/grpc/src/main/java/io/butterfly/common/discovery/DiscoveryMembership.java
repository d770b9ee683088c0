package io.butterfly.common.discovery;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.RetryPolicy;
import io.butterfly.proto.discovery.v1.DiscoveryResponse;
import io.butterfly.proto.discovery.v1.JoinReason;
import io.butterfly.proto.discovery.v1.Member;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's membership in discovery, the same for every role: the node's Ed25519 identity from its data
 * directory, a DISCOVERY_REQUEST (docs/bootstrap-protocol.md §3.1), the signed join handshake (§3.2) with retries
 * of retryable refusals (docs/bootstrap-protocol.md §8.2), then signed heartbeats that rejoin when discovery forgot the node (it
 * restarted), and a leave notification on {@link #stop()}. It all runs on one background thread.
 */
public final class DiscoveryMembership {

    private static final Logger log = LoggerFactory.getLogger(DiscoveryMembership.class);

    private final Channel channel;
    private final Path dataDir;
    private final String nodeId;
    private final String clusterName;
    private final long features;
    private final long heartbeatMillis;
    private final Supplier<Member> self;
    private volatile SignedDiscoveryClient client;
    private volatile boolean joined;
    /** The join's waits (docs/bootstrap-protocol.md §8.2): 200 ms (or the server's retry_after), doubling up to 5 s. */
    public static final RetryPolicy JOIN_RETRY = new RetryPolicy(200, 5_000);
    private final RetryPolicy joinRetry;
    private volatile String joinError;
    private volatile Thread loop;

    /**
     * @param self this node as it joins (role, addresses, capabilities); called on the background thread before
     *             each join, so slow capability detection does not hold up start-up
     */
    public DiscoveryMembership(Channel channel, Path dataDir, String nodeId, String clusterName, long features,
                               long heartbeatMillis, Supplier<Member> self) {
        this(channel, dataDir, nodeId, clusterName, features, heartbeatMillis, self, JOIN_RETRY);
    }

    /** @param joinRetry the waits between join attempts (retried until admitted or refused for good) */
    public DiscoveryMembership(Channel channel, Path dataDir, String nodeId, String clusterName, long features,
                               long heartbeatMillis, Supplier<Member> self, RetryPolicy joinRetry) {
        this.joinRetry = joinRetry;
        this.channel = channel;
        this.dataDir = dataDir;
        this.nodeId = nodeId;
        this.clusterName = clusterName;
        this.features = features;
        this.heartbeatMillis = heartbeatMillis;
        this.self = self;
    }

    public void start() {
        loop = DaemonThreads.start("discovery-membership", this::run);
    }

    private void run() {
        try {
            boolean restart = Files.exists(dataDir.resolve("identity.key"));
            NodeIdentity identity = NodeIdentity.loadOrCreate(dataDir);
            log.info("node identity {} ({})", identity.publicKeyHex(), restart ? "kept from an earlier start" : "new");
            client = new SignedDiscoveryClient(channel, identity, nodeId, clusterName, features, Clock.systemUTC(),
                    joinRetry);
            if (!join(restart ? JoinReason.REJOIN_AFTER_RESTART : JoinReason.INITIAL_START)) {
                return;
            }
            while (!Thread.currentThread().isInterrupted()) {
                Thread.sleep(heartbeatMillis);
                heartbeat();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (UncheckedIOException e) {
            joinError = "identity: " + e.getMessage();
            log.error("cannot load or create the node identity in {}: {}", dataDir, e.toString());
        }
    }

    private boolean join(JoinReason reason) throws InterruptedException {
        Member me = self.get();
        if (!discover(me)) {
            return false;
        }
        try {
            client.join(me, reason, why -> {
                joinError = why;
                log.info("join attempt failed ({})", why);
            });
            joined = true;
            joinError = null;
            log.info("joined cluster '{}' as {} ({})", clusterName, nodeId, reason);
            return true;
        } catch (ButterflyException e) {
            joinError = e.code() + ": " + e.getMessage();
            log.error("join refused, not retrying: {}", joinError);
            return false;
        }
    }

    /** Another cluster is final; an unreachable discovery is left to the join's own retries. */
    private boolean discover(Member me) {
        try {
            DiscoveryResponse seen = client.discover(me.getCapabilities());
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

    /** Stops the loop and tells discovery the node leaves (best effort). */
    public void stop() {
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
            joined = false;
        }
    }

    public boolean joined() {
        return joined;
    }

    public String joinError() {
        return joinError;
    }
}
