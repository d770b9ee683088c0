package io.butterfly.coordinator.invariants;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.liveness.NodeObservation;
import java.util.List;
import java.util.function.Function;

/**
 * Everything one check looks at.
 *
 * @param coordinators        the replicas' leadership claims known here
 * @param observations        the failure detector's view per node; null where this replica does not receive
 *                            heartbeats (a follower), which skips the checks that need it
 * @param connectionTimeoutMs silence after which an operational node breaks connection liveness
 */
public record InvariantInputs(ClusterState state, List<CoordinatorClaim> coordinators,
                              Function<String, NodeObservation> observations, long nowMs, long connectionTimeoutMs) {

    public InvariantInputs {
        coordinators = List.copyOf(coordinators);
    }
}
