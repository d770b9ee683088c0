package io.butterfly.coordinator.jobs.wire;

import java.util.Arrays;
import java.util.Objects;

/**
 * The JOBS protocol's messages (docs/jobs.md). seed, step and position are unsigned 64-bit on the wire, held in a
 * {@code long} bit for bit ({@link Long#compareUnsigned} orders them).
 */
public sealed interface JobsMessage {

    Opcode opcode();

    /** Which batch a client asks for: the job named by its seed, a pass over its dataset, a dataset position. */
    record JobRequest(long seed, long step, long position) implements JobsMessage {
        public Opcode opcode() {
            return Opcode.JOB_REQUEST;
        }
    }

    /** The batch at (seed, step, position): {@code data} is its samples (docs/jobs.md, the payload). */
    record JobResponse(long seed, long step, long position, byte[] data) implements JobsMessage {
        public JobResponse {
            data = Objects.requireNonNull(data, "data");
        }

        public Opcode opcode() {
            return Opcode.JOB_RESPONSE;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof JobResponse r && r.seed == seed && r.step == step && r.position == position
                    && Arrays.equals(r.data, data);
        }

        @Override
        public int hashCode() {
            return Objects.hash(seed, step, position, Arrays.hashCode(data));
        }

        @Override
        public String toString() {
            return "JobResponse[seed=" + seed + ", step=" + step + ", position=" + position + ", " + data.length + " bytes]";
        }
    }

    /** A client's result for the batch at (seed, step, position): opaque bytes. */
    record Result(long seed, long step, long position, byte[] data) implements JobsMessage {
        public Result {
            data = Objects.requireNonNull(data, "data");
        }

        public Opcode opcode() {
            return Opcode.RESULT;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Result r && r.seed == seed && r.step == step && r.position == position
                    && Arrays.equals(r.data, data);
        }

        @Override
        public int hashCode() {
            return Objects.hash(seed, step, position, Arrays.hashCode(data));
        }

        @Override
        public String toString() {
            return "Result[seed=" + seed + ", step=" + step + ", position=" + position + ", " + data.length + " bytes]";
        }
    }

    /** A RESULT kept: {@code stored} if by this frame, false if an earlier one had been (it is kept once). */
    record ResultAck(long seed, long step, long position, boolean stored) implements JobsMessage {
        public Opcode opcode() {
            return Opcode.RESULT_ACK;
        }
    }

    /** A refusal: {@code code} is a {@link WireError}'s (or a newer one), {@code message} says why. */
    record ErrorFrame(int code, String message) implements JobsMessage {
        public ErrorFrame {
            if (code < 0 || code > 0xFFFF) {
                throw new IllegalArgumentException("error code is a u16, got " + code);
            }
            message = Objects.requireNonNullElse(message, "");
        }

        public Opcode opcode() {
            return Opcode.ERROR;
        }
    }
}
