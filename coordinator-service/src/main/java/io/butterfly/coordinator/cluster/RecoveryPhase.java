package io.butterfly.coordinator.cluster;

/** Where an ongoing {@link Recovery} stands, as the replicated state tells it. */
public enum RecoveryPhase {
    /** A stage of the plan is lost; the leader is planning it away. */
    REPLANNING,
    /** A stage is lost and the workers left cannot hold the model: the system waits for capacity to join. */
    WAITING_FOR_CAPACITY,
    /** The new plan (or a reload) is loading. */
    LOADING,
    /** Every stage is loaded; the weights are being cross-validated. */
    VALIDATING,
    /** A load failed for a reason another attempt cannot mend, or the weights failed validation: an operator must act. */
    STALLED;

    /** Whether the cluster gets back to READY by itself from here (given time, and capacity where it waits for it). */
    public boolean recovering() {
        return this != WAITING_FOR_CAPACITY && this != STALLED;
    }
}
