package io.butterfly.coordinator.invariants;

/** The global properties of docs/state-machines.md §3.3 the coordinator checks at run time (§7.4). */
public enum Invariant {
    /** Safety 1: at most one coordinator leads in a term. */
    SINGLE_COORDINATOR,
    /** Safety 2: every stage of the pipeline has an operational worker unless shutting down. */
    QUORUM_OPERATIONAL,
    /** Safety 3: the epoch never decreases. */
    EPOCH_MONOTONICITY,
    /** docs/state-machines.md §7.4: nodes operate on at most two epochs (one skew while an assignment rolls out). */
    EPOCH_SKEW,
    /** Consistency 1: component states align with the system state (docs/state-machines.md §3.1). */
    STATE_ALIGNMENT,
    /** Consistency 3: assigned layer ranges form a valid partition of the model. */
    WORK_ASSIGNMENT_VALIDITY,
    /** Consistency 5: operational nodes have heartbeats within the timeout. */
    CONNECTION_LIVENESS
}
