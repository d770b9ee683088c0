package io.butterfly.coordinator.planning;

/**
 * No plan fits the workers' memory (docs/initialization-and-bootstrap.md §7.6, InsufficientResources). Carries
 * the figures so the caller can report need and capacity.
 */
public class InfeasiblePlanException extends IllegalArgumentException {

    private final long requiredBytes;
    private final long availableBytes;

    public InfeasiblePlanException(String message, long requiredBytes, long availableBytes) {
        super(message);
        this.requiredBytes = requiredBytes;
        this.availableBytes = availableBytes;
    }

    /** Bytes the model (or the part that did not fit) needs. */
    public long requiredBytes() {
        return requiredBytes;
    }

    /** Bytes the workers offer (or the worker that was too small). */
    public long availableBytes() {
        return availableBytes;
    }
}
