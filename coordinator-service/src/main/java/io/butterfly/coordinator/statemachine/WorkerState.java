package io.butterfly.coordinator.statemachine;

/** A worker as the control log sees it (docs/state-machines.md §2.2). */
public enum WorkerState {
    INITIALIZED,
    JOINED,
    READY,
    COMPUTING,
    AGGREGATING,
    COMMITTING,
    SUSPECT,
    FAILED
}
