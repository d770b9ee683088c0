package io.butterfly.coordinator.statemachine;

/** An inference request's lifecycle (docs/state-machines.md §2.3). */
public enum TaskState {
    QUEUED, SCHEDULED, DISPATCHED, EXECUTING, VALIDATING, COMPLETED, FAILED
}
