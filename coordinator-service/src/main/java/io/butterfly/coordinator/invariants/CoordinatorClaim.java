package io.butterfly.coordinator.invariants;

/** What one coordinator replica says about itself: whether it leads, and in which term. */
public record CoordinatorClaim(String replicaId, boolean leader, long term) {
}
