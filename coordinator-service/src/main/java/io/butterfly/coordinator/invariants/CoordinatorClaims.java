package io.butterfly.coordinator.invariants;

import java.util.List;

/**
 * Where the checker learns who claims to lead: the Raft group's view where there is one.
 * {@link #receivesHeartbeats()} is false on a follower, which then skips the liveness-based checks.
 */
public interface CoordinatorClaims {

    List<CoordinatorClaim> claims();

    boolean receivesHeartbeats();
}
