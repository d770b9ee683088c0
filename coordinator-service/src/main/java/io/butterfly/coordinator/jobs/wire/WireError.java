package io.butterfly.coordinator.jobs.wire;

/**
 * The error codes an ERROR frame carries (docs/jobs.md). After the ones that {@link #closes()}, the coordinator cannot
 * tell where the next frame starts (it did not read the payload), so it closes the connection once the ERROR is sent;
 * after the others the connection stays open for the next frame.
 */
public enum WireError {
    BAD_MAGIC(1, true),
    UNSUPPORTED_VERSION(2, true),
    UNKNOWN_OPCODE(3, false),
    PAYLOAD_TOO_LARGE(4, true),
    /** The payload's length does not fit its opcode's fixed fields and sizes. */
    BAD_LENGTH(5, false),
    /** A frame only the coordinator sends (JOB_RESPONSE, RESULT_ACK) or an ERROR, sent to it. */
    UNEXPECTED_OPCODE(6, false),
    /** No job has this seed. */
    UNKNOWN_JOB(7, false),
    /** The position is at or past the end of the job's dataset. */
    POSITION_OUT_OF_RANGE(8, false),
    /** The cluster serves no model now, or this replica lacks the job's dataset: retry, or ask another replica. */
    UNAVAILABLE(9, false),
    /** A sample's generation failed (the message says why). */
    GENERATION_FAILED(10, false),
    /** The results kept for the job reached its bound ({@code max_result_bytes}). */
    RESULTS_FULL(11, false),
    /** A RESULT for a batch no replica handed out. */
    NOT_HANDED_OUT(12, false),
    /** A request for any batch of a step whose every batch has a result: nothing is left to do in it. */
    STEP_COMPLETE(13, false);

    private final int code;
    private final boolean closes;

    WireError(int code, boolean closes) {
        this.code = code;
        this.closes = closes;
    }

    public int code() {
        return code;
    }

    /** Whether the connection closes after this error (the stream's framing is lost). */
    public boolean closes() {
        return closes;
    }

    /** The error numbered {@code code}, or null for one this version does not know. */
    public static WireError of(int code) {
        for (WireError e : values()) {
            if (e.code == code) {
                return e;
            }
        }
        return null;
    }
}
