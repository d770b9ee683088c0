package io.butterfly.coordinator.statemachine;

import java.util.List;

/**
 * System transitions the reducer performs that docs/state-machines.md §1.3 does not list, each with why. They are kept out of
 * {@link StateMachines#SYSTEM} so the spec table stays exact (and its diagram and tests stay the spec's).
 */
public final class SystemDeviations {

    private SystemDeviations() {
    }

    public static final List<ForbiddenTransition<SystemState>> ALLOWED = List.of(
            new ForbiddenTransition<>(SystemState.READY, SystemState.DEGRADED,
                    "a failure or a reassignment while serving: tasks run while the system stays READY (COMPUTING is"
                            + " not entered), so failure_detected() arrives in READY"),
            new ForbiddenTransition<>(SystemState.BOOTSTRAPPING, SystemState.SHUTDOWN,
                    "a bootstrap that cannot finish (no quorum, model missing) must still be stoppable"));

    /** The deviation's reason if the reducer may move from -> to although docs/state-machines.md §1.3 does not list it. */
    public static String reason(SystemState from, SystemState to) {
        return ALLOWED.stream().filter(d -> d.matches(from, to)).map(ForbiddenTransition::reason).findFirst()
                .orElse(null);
    }
}
