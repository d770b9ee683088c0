package io.butterfly.coordinator.statemachine;

import java.util.EnumSet;
import java.util.Set;

/** System-level lifecycle (docs/state-machines.md §1); the transition table lives here so tests can check it alone. */
public enum SystemState {
    UNINITIALIZED,
    BOOTSTRAPPING,
    READY,
    COMPUTING,
    COMMITTING,
    DEGRADED,
    SHUTDOWN,
    TERMINATED;

    /**
     * Whether {@code next} is reachable in one step (docs/state-machines.md §1.3). Staying put is always allowed except for
     * TERMINATED, which is absorbing only in the sense that nothing new may happen there. Beyond the
     * table: BOOTSTRAPPING may go to SHUTDOWN so a bootstrap that cannot finish can still be stopped,
     * and READY may go to DEGRADED (a failure or a reassignment while idle).
     */
    public boolean canTransitionTo(SystemState next) {
        if (next == this) {
            return this != TERMINATED;
        }
        return successors().contains(next);
    }

    private Set<SystemState> successors() {
        return switch (this) {
            case UNINITIALIZED -> EnumSet.of(BOOTSTRAPPING);
            case BOOTSTRAPPING -> EnumSet.of(READY, SHUTDOWN);
            case READY -> EnumSet.of(COMPUTING, DEGRADED, SHUTDOWN);
            case COMPUTING -> EnumSet.of(COMMITTING, DEGRADED, SHUTDOWN);
            case COMMITTING -> EnumSet.of(READY);
            case DEGRADED -> EnumSet.of(READY, SHUTDOWN);
            case SHUTDOWN -> EnumSet.of(TERMINATED);
            case TERMINATED -> EnumSet.noneOf(SystemState.class);
        };
    }

    /** States in which new inference work is accepted (DEGRADED is not: no new work during recovery, docs/state-machines.md §1.4). */
    public boolean acceptsWork() {
        return this == READY || this == COMPUTING;
    }
}
