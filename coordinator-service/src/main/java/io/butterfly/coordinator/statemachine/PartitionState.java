package io.butterfly.coordinator.statemachine;

/**
 * A worker's model partition (docs/state-machines.md §2.5). The names of the load phases match the
 * worker's LoadPhase proto enum so the gRPC edge can map by name. FAILED is not in docs/state-machines.md §2.5: it records a
 * failed load until the worker retries or is reassigned.
 */
public enum PartitionState {
    UNLOADED,
    DOWNLOADING,
    VALIDATING,
    LOADED,
    WARMING,
    READY,
    IN_USE,
    EVICTED,
    FAILED;

    /** The phases a worker reports while loading, before READY. */
    public boolean isLoadPhase() {
        return this == DOWNLOADING || this == VALIDATING || this == LOADED || this == WARMING;
    }

    /**
     * Within one epoch a load only moves forward (UNLOADED ... READY); a failed load may restart at any
     * phase because the worker retries on its own.
     */
    public boolean canAdvanceTo(PartitionState next) {
        if (this == FAILED) {
            return next.isLoadPhase() || next == READY;
        }
        return (isLoadPhase() || this == UNLOADED || this == READY) && next.ordinal() >= ordinal()
                && next.ordinal() <= READY.ordinal();
    }
}
