package io.butterfly.coordinator.control;

/**
 * What one replica of the control-log group says about itself, asked of that replica.
 *
 * @param replicaId peer id
 * @param role      LEADER, FOLLOWER, CANDIDATE, LISTENER; UNREACHABLE when it did not answer in time
 * @param term      the term it leads in (leaders only; 0 otherwise)
 */
public record ReplicaView(String replicaId, String role, long term) {

    public static final String UNREACHABLE = "UNREACHABLE";

    public boolean leader() {
        return "LEADER".equals(role);
    }
}
