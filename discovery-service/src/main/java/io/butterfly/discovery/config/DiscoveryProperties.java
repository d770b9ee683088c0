package io.butterfly.discovery.config;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Discovery settings; the defaults run the embedded one-machine cluster.
 *
 * @param nodeId           discovery's own node id (it signs join responses as this)
 * @param dataDir          where discovery keeps its Ed25519 identity
 * @param clusterName      joins naming another cluster are refused
 * @param protocolVersion  this node's protocol version (major.minor); majors must match to join
 * @param features         protocol feature flags this service supports (docs/bootstrap-protocol.md §7.2 bitmap)
 * @param requiredFeatures flags a joining node must support
 * @param maxMembers       members beyond this are refused with CLUSTER_FULL
 * @param admission        authentication, replay and rate-limit settings
 * @param backend          where membership is kept: embedded (Hazelcast, the default), static (seed list) or consul
 * @param memberTtl        a member that sends no heartbeat (or join/ack) for this long drops out (every backend's joins)
 * @param hazelcast        embedded: the Hazelcast member this replica runs
 * @param staticMembers    static: seeds as {@code [role/]node-id=host:grpc-port} (docs/initialization-and-bootstrap.md §3.1)
 * @param staticProbeTimeout  static: TCP connect timeout of a seed's reachability probe
 * @param staticProbeInterval static: how long a probe result is reused
 */
@ConfigurationProperties("butterfly.discovery")
public record DiscoveryProperties(
        @DefaultValue("discovery-0") String nodeId,
        @DefaultValue(".butterfly/discovery-data") Path dataDir,
        @DefaultValue("butterfly") String clusterName,
        @DefaultValue("1.0") String protocolVersion,
        @DefaultValue("0") long features,
        @DefaultValue("0") long requiredFeatures,
        @DefaultValue("256") int maxMembers,
        @DefaultValue Admission admission,
        @DefaultValue("embedded") Backend backend,
        @DefaultValue("30s") Duration memberTtl,
        @DefaultValue Hazelcast hazelcast,
        @DefaultValue List<String> staticMembers,
        @DefaultValue("300ms") Duration staticProbeTimeout,
        @DefaultValue("2s") Duration staticProbeInterval) {

    /** Membership backends (docs/architecture.md); see docs/kubernetes.md, "Membership backends". */
    public enum Backend { EMBEDDED, STATIC, CONSUL }

    /**
     * @param port        this replica's Hazelcast port (the launcher passes 5701 + its port offset); no auto-increment,
     *                    so a replica never wanders onto another cluster's port
     * @param bindAddress the only address Hazelcast binds and advertises (loopback on one machine)
     * @param members     TCP-IP join list, {@code host:port}; empty means just this replica
     */
    public record Hazelcast(
            @DefaultValue("5701") int port,
            @DefaultValue("127.0.0.1") String bindAddress,
            @DefaultValue List<String> members) {
    }

    /**
     * @param trustOnFirstUse admit node ids missing from the trust store and pin their first key; for the
     *                        embedded one-machine default only (the {@code prod} profile turns it off)
     * @param trustedKeys     trust store: node id → hex raw Ed25519 public key
     * @param replayWindow    accepted clock skew of a message timestamp, both directions (docs/bootstrap-protocol.md §9.2)
     * @param joinBurst       join attempts one source address may make back to back
     * @param joinsPerSecond  sustained join attempts per source address
     */
    public record Admission(
            @DefaultValue("true") boolean trustOnFirstUse,
            @DefaultValue Map<String, String> trustedKeys,
            @DefaultValue("5m") Duration replayWindow,
            @DefaultValue("32") int joinBurst,
            @DefaultValue("4") double joinsPerSecond) {
    }
}
