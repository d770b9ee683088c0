package io.butterfly.worker.partition;

/**
 * Where a partition's load is (partition state machine, docs/state-machines.md §2.5). The names are the wire's and the
 * REST state's: {@code LOAD_PHASE_UNSPECIFIED} is a worker with nothing assigned yet.
 */
public enum LoadPhase {
    LOAD_PHASE_UNSPECIFIED,
    DOWNLOADING,
    VALIDATING,
    LOADED,
    WARMING,
    READY,
    FAILED
}
