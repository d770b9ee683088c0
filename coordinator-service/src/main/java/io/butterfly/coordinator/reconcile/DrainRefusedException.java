package io.butterfly.coordinator.reconcile;

import io.butterfly.coordinator.planning.InfeasiblePlanException;

/**
 * A drain that cannot be done as asked (the node's stage has nowhere to go, or the cluster is in no state to re-plan):
 * nothing was committed. Where capacity is why, the cause is the planner's {@link InfeasiblePlanException}, with its
 * need and capacity.
 *
 * @see Drains
 */
public class DrainRefusedException extends RuntimeException {

    public DrainRefusedException(String message, InfeasiblePlanException capacity) {
        super(message, capacity);
    }

    public DrainRefusedException(String message) {
        super(message);
    }

    /** What the model needs against what the workers left offer, when that is why; else null. */
    public InfeasiblePlanException capacity() {
        return getCause() instanceof InfeasiblePlanException e ? e : null;
    }
}
