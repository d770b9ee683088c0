package io.butterfly.coordinator.jobs.wire;

/** A frame refused: the ERROR frame to answer it with. */
public final class FrameException extends RuntimeException {

    private final WireError error;

    public FrameException(WireError error, String message) {
        super(message);
        this.error = error;
    }

    public WireError error() {
        return error;
    }

    /** The ERROR frame that answers this. */
    public JobsMessage.ErrorFrame toMessage() {
        return new JobsMessage.ErrorFrame(error.code(), getMessage());
    }
}
