package io.butterfly.common.api;

import com.fasterxml.jackson.annotation.JsonInclude;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.annotation.JsonNaming;

/**
 * A member of the cluster as discovery's {@code GET /api/v1/members} lists it.
 *
 * @param state        ACTIVE (joined), REACHABLE (a static seed that answers), PASSING or UNHEALTHY (Consul's checks)
 * @param address      its gRPC address, {@code host:port}
 * @param joinedAt     when it joined (ISO-8601); null if the backend does not know
 * @param lastSeen     when it was last heard of (ISO-8601); null if never
 * @param publicKey    its Ed25519 public key, hex
 * @param capabilities what it said it can do when it joined; absent for a member that said nothing
 */
@JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
public record MemberStatus(String nodeId, String role, String state, String address, int httpPort, String version,
                           String joinedAt, String lastSeen, String publicKey,
                           @JsonInclude(JsonInclude.Include.NON_NULL) Capabilities capabilities) {

    /** @param gpus how many GPUs it has */
    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    public record Capabilities(int cpuCores, long memoryBytes, double measuredGflops, double memoryBandwidthGbps,
                               String storageType, String device, int gpus, long weightBytes) {
    }
}
