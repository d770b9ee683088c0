package io.butterfly.coordinator.statemachine;

/** The coordinator's own lifecycle (docs/state-machines.md §2.1). */
public enum CoordinatorState {
    ELECTED, MONITORING, ASSIGNING, COORDINATING, AGGREGATING, COMMITTING, RECOVERING
}
