package io.butterfly.coordinator.jobs.wire;

/** A frame's type, its header's byte 5 (docs/jobs.md). */
public enum Opcode {
    /** Client to coordinator: the batch at (seed, step, position), 24 bytes. */
    JOB_REQUEST(0),
    /** Client to coordinator: what the client made of a batch, 28 bytes and its result. */
    RESULT(1),
    /** Coordinator to client: the batch, 28 bytes and its samples. */
    JOB_RESPONSE(2),
    /** Either way: {@code [error_code:u16][message UTF-8]}, see {@link WireError}. */
    ERROR(3),
    /** Coordinator to client: a RESULT is stored (now, or already was), 25 bytes. */
    RESULT_ACK(4);

    private final int code;

    Opcode(int code) {
        this.code = code;
    }

    public int code() {
        return code;
    }

    /** The opcode numbered {@code code}, or null for one this version does not know. */
    public static Opcode of(int code) {
        for (Opcode o : values()) {
            if (o.code == code) {
                return o;
            }
        }
        return null;
    }
}
