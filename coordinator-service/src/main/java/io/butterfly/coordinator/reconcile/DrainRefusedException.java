package io.butterfly.coordinator.reconcile;

/**
 * A drain that cannot be done as asked (the node's stage has nowhere to go, or the cluster is in no state to re-plan):
 * nothing was committed.
 *
 * @see Drains
 */
public class DrainRefusedException extends RuntimeException {

    private final long requiredBytes;
    private final long availableBytes;

    /** @param requiredBytes what the model needs, when capacity is why (else 0), against {@code availableBytes} */
    public DrainRefusedException(String message, long requiredBytes, long availableBytes) {
        super(message);
        this.requiredBytes = requiredBytes;
        this.availableBytes = availableBytes;
    }

    public DrainRefusedException(String message) {
        this(message, 0, 0);
    }

    public long requiredBytes() {
        return requiredBytes;
    }

    public long availableBytes() {
        return availableBytes;
    }
}
