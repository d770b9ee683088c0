package io.butterfly.coordinator.cluster;

/**
 * The cluster's configuration as committed by a ConfigChange (docs/bootstrap-protocol.md §5.3,
 * docs/initialization-and-bootstrap.md §3.2 ClusterConfig).
 *
 * @param clusterName     cluster the members belong to
 * @param quorumSize      operational nodes the system needs to serve (docs/state-machines.md §1.1); with no stage
 *                        replicas every stage is needed, so it is the pipeline's size
 * @param maxByzantine    failures tolerated (f, with quorum = 2f + 1)
 * @param memberCount     workers known to the cluster
 * @param protocolVersion Butterfly protocol version the members speak
 */
public record ClusterConfig(String clusterName, int quorumSize, int maxByzantine, int memberCount,
                            String protocolVersion) {

    /** Checks the rules a committed configuration obeys; a violating ConfigChange is refused. */
    void validate() {
        if (clusterName == null || clusterName.isBlank()) {
            throw new IllegalArgumentException("cluster_name must not be empty");
        }
        if (quorumSize < 1) {
            throw new IllegalArgumentException("quorum_size must be at least 1, got " + quorumSize);
        }
        if (maxByzantine < 0 || 2 * maxByzantine + 1 > quorumSize) {
            throw new IllegalArgumentException("max_byzantine " + maxByzantine + " needs a quorum of at least "
                    + (2 * maxByzantine + 1) + ", quorum_size is " + quorumSize);
        }
        if (memberCount < 0) {
            throw new IllegalArgumentException("current_member_count must not be negative, got " + memberCount);
        }
        if (protocolVersion == null || protocolVersion.isBlank()) {
            throw new IllegalArgumentException("protocol_version must not be empty");
        }
    }
}
