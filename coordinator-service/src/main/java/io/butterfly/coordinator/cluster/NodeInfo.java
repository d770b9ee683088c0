package io.butterfly.coordinator.cluster;

import java.util.Objects;

/**
 * What a node declared when it joined; immutable, so replicas agree on it.
 *
 * @param throughput measured dense float32 throughput in GFLOP/s
 */
public record NodeInfo(String nodeId, String role, String host, int grpcPort, int httpPort, int cpuCores,
                       long memoryBytes, double throughput, String device) {

    public NodeInfo {
        Objects.requireNonNull(nodeId, "nodeId");
        if (nodeId.isBlank()) {
            throw new IllegalArgumentException("nodeId must not be blank");
        }
    }
}
