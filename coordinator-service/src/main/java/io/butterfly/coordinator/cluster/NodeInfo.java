package io.butterfly.coordinator.cluster;

import java.util.Objects;

/**
 * What a node declared when it joined; immutable, so replicas agree on it.
 *
 * @param throughput  measured dense float32 throughput in GFLOP/s
 * @param weightBytes bytes one projection weight takes in the node's engine (4 float32, 2 F16/BF16; 0 = not reported,
 *                    float32)
 */
public record NodeInfo(String nodeId, String role, String host, int grpcPort, int httpPort, int cpuCores,
                       long memoryBytes, double throughput, String device, int weightBytes) {

    public NodeInfo {
        Objects.requireNonNull(nodeId, "nodeId");
        if (nodeId.isBlank()) {
            throw new IllegalArgumentException("nodeId must not be blank");
        }
    }

    /** A node that reported no weight precision (float32). */
    public NodeInfo(String nodeId, String role, String host, int grpcPort, int httpPort, int cpuCores, long memoryBytes,
                    double throughput, String device) {
        this(nodeId, role, host, grpcPort, httpPort, cpuCores, memoryBytes, throughput, device, 0);
    }
}
