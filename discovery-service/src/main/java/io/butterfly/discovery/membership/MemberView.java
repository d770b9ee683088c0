package io.butterfly.discovery.membership;

/**
 * One member as discovery sees it (domain form; the gRPC layer maps it to the proto).
 *
 * @param nodeId       stable node id
 * @param role         "worker" | "coordinator" | "registry"
 * @param host         address other nodes reach it at
 * @param grpcPort     gRPC port
 * @param httpPort     HTTP (REST/Actuator) port
 * @param version      software version the node reports
 * @param joinedAtMs   first join (epoch millis)
 * @param lastSeenMs   latest join, acknowledgement or heartbeat (epoch millis)
 * @param capabilities what the node reported it can do; null when unknown (a seed, a catalog entry without it)
 * @param publicKeyHex the Ed25519 identity key its join was signed with (hex)
 * @param acknowledged the node confirmed the join response (JOIN_ACK); only then is it listed
 * @param state        how discovery knows it (joined members: JOINING until acknowledged, then ACTIVE)
 */
public record MemberView(String nodeId, String role, String host, int grpcPort, int httpPort, String version,
                         long joinedAtMs, long lastSeenMs, Capabilities capabilities, String publicKeyHex,
                         boolean acknowledged, MemberState state) {

    /** A member that joined through discovery. */
    public MemberView(String nodeId, String role, String host, int grpcPort, int httpPort, String version,
                      long joinedAtMs, long lastSeenMs, Capabilities capabilities, String publicKeyHex, boolean acknowledged) {
        this(nodeId, role, host, grpcPort, httpPort, version, joinedAtMs, lastSeenMs, capabilities, publicKeyHex,
                acknowledged, acknowledged ? MemberState.ACTIVE : MemberState.JOINING);
    }

    public MemberView seenAt(long nowMs) {
        return new MemberView(nodeId, role, host, grpcPort, httpPort, version, joinedAtMs, nowMs, capabilities,
                publicKeyHex, acknowledged);
    }

    public MemberView acknowledgedAt(long nowMs) {
        return new MemberView(nodeId, role, host, grpcPort, httpPort, version, joinedAtMs, nowMs, capabilities,
                publicKeyHex, true);
    }
}
