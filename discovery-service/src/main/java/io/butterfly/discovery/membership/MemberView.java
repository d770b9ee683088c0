package io.butterfly.discovery.membership;

/**
 * One member as discovery sees it (domain form; the gRPC layer maps it to the proto).
 *
 * @param nodeId      stable node id
 * @param role        "worker" | "coordinator" | "registry"
 * @param host        address other nodes reach it at
 * @param grpcPort    gRPC port
 * @param httpPort    HTTP (REST/Actuator) port
 * @param version     software version the node reports
 * @param joinedAtMs  first join (epoch millis)
 * @param lastSeenMs  latest join or refresh (epoch millis)
 * @param capabilities opaque capability payload kept for the membership listing
 */
public record MemberView(String nodeId, String role, String host, int grpcPort, int httpPort, String version,
                         long joinedAtMs, long lastSeenMs, Object capabilities) {
}
