package io.butterfly.coordinator.jobs.wire;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The JOBS wire format (docs/jobs.md), pure: a 10-byte big-endian header ({@code "JOBS"}, version 1, opcode, payload
 * length) and each opcode's payload. Whatever the bytes, decoding gives a message or a {@link FrameException} naming
 * the {@link WireError} to answer with; nothing else escapes. The header is checked before its payload is read, magic
 * and version first, so a transport refuses an oversized payload without reading or buffering it.
 */
public final class JobsCodec {

    public static final int HEADER_BYTES = 10;
    public static final byte[] MAGIC = {'J', 'O', 'B', 'S'};
    public static final int VERSION = 1;
    /** seed, step, position. */
    public static final int ADDRESS_BYTES = 24;
    /** seed, step, position and the data's size. */
    public static final int SIZED_BYTES = ADDRESS_BYTES + 4;
    static final int ACK_BYTES = ADDRESS_BYTES + 1;

    private JobsCodec() {
    }

    /**
     * Checks a header: magic, then version, then a payload length of at most {@code maxPayload} bytes (the length is
     * unsigned on the wire). The opcode is not checked here: an unknown one's payload is read and answered.
     */
    public static FrameHeader header(byte[] bytes, int maxPayload) {
        if (bytes.length < HEADER_BYTES) {
            throw new FrameException(WireError.BAD_LENGTH, "a header is " + HEADER_BYTES + " bytes, got " + bytes.length);
        }
        if (!Arrays.equals(bytes, 0, 4, MAGIC, 0, 4)) {
            throw new FrameException(WireError.BAD_MAGIC, "a frame starts with the magic \"JOBS\"");
        }
        int version = bytes[4] & 0xFF;
        if (version != VERSION) {
            throw new FrameException(WireError.UNSUPPORTED_VERSION,
                    "protocol version " + version + " is not supported (this coordinator speaks " + VERSION + ")");
        }
        long length = ByteBuffer.wrap(bytes, 6, 4).getInt() & 0xFFFFFFFFL;
        if (length > maxPayload) {
            throw new FrameException(WireError.PAYLOAD_TOO_LARGE,
                    "payload of " + length + " bytes is over the maximum of " + maxPayload);
        }
        return new FrameHeader(bytes[5] & 0xFF, (int) length);
    }

    /** The message a header's opcode and its payload make. */
    public static JobsMessage decode(int opcode, byte[] payload) {
        Opcode op = Opcode.of(opcode);
        if (op == null) {
            throw new FrameException(WireError.UNKNOWN_OPCODE, "opcode " + opcode + " is unknown");
        }
        ByteBuffer in = ByteBuffer.wrap(payload);
        switch (op) {
            case JOB_REQUEST:
                exactly(op, payload, ADDRESS_BYTES);
                return new JobsMessage.JobRequest(in.getLong(), in.getLong(), in.getLong());
            case RESULT:
            case JOB_RESPONSE: {
                byte[] data = sized(op, payload);
                return op == Opcode.RESULT
                        ? new JobsMessage.Result(in.getLong(0), in.getLong(8), in.getLong(16), data)
                        : new JobsMessage.JobResponse(in.getLong(0), in.getLong(8), in.getLong(16), data);
            }
            case RESULT_ACK:
                exactly(op, payload, ACK_BYTES);
                int stored = payload[ADDRESS_BYTES] & 0xFF;
                if (stored > 1) {
                    throw new FrameException(WireError.BAD_LENGTH, "RESULT_ACK's stored flag is 0 or 1, got " + stored);
                }
                return new JobsMessage.ResultAck(in.getLong(), in.getLong(), in.getLong(), stored == 1);
            case ERROR:
                if (payload.length < 2) {
                    throw new FrameException(WireError.BAD_LENGTH, "ERROR's payload is at least 2 bytes, got "
                            + payload.length);
                }
                return new JobsMessage.ErrorFrame(in.getShort() & 0xFFFF,
                        new String(payload, 2, payload.length - 2, StandardCharsets.UTF_8));
            default:
                throw new IllegalStateException("unhandled opcode " + op);
        }
    }

    /** Decodes one whole frame: header, then exactly the payload it announces. */
    public static JobsMessage decodeFrame(byte[] frame, int maxPayload) {
        FrameHeader h = header(frame, maxPayload);
        if (frame.length - HEADER_BYTES != h.payloadLength()) {
            throw new FrameException(WireError.BAD_LENGTH, "the header announces " + h.payloadLength()
                    + " payload bytes, the frame holds " + (frame.length - HEADER_BYTES));
        }
        return decode(h.opcode(), Arrays.copyOfRange(frame, HEADER_BYTES, frame.length));
    }

    /** The frame (header and payload) that carries {@code message}. */
    public static byte[] encode(JobsMessage message) {
        byte[] payload = payload(message);
        return ByteBuffer.allocate(HEADER_BYTES + payload.length).put(MAGIC).put((byte) VERSION)
                .put((byte) message.opcode().code()).putInt(payload.length).put(payload).array();
    }

    private static byte[] payload(JobsMessage message) {
        if (message instanceof JobsMessage.JobRequest r) {
            return ByteBuffer.allocate(ADDRESS_BYTES).putLong(r.seed()).putLong(r.step()).putLong(r.position()).array();
        } else if (message instanceof JobsMessage.JobResponse r) {
            return sized(r.seed(), r.step(), r.position(), r.data());
        } else if (message instanceof JobsMessage.Result r) {
            return sized(r.seed(), r.step(), r.position(), r.data());
        } else if (message instanceof JobsMessage.ResultAck a) {
            return ByteBuffer.allocate(ACK_BYTES).putLong(a.seed()).putLong(a.step()).putLong(a.position())
                    .put((byte) (a.stored() ? 1 : 0)).array();
        } else if (message instanceof JobsMessage.ErrorFrame e) {
            byte[] text = e.message().getBytes(StandardCharsets.UTF_8);
            return ByteBuffer.allocate(2 + text.length).putShort((short) e.code()).put(text).array();
        }
        throw new IllegalArgumentException("unknown message " + message);
    }

    private static byte[] sized(long seed, long step, long position, byte[] data) {
        return ByteBuffer.allocate(SIZED_BYTES + data.length).putLong(seed).putLong(step).putLong(position)
                .putInt(data.length).put(data).array();
    }

    private static void exactly(Opcode op, byte[] payload, int bytes) {
        if (payload.length != bytes) {
            throw new FrameException(WireError.BAD_LENGTH, op + "'s payload is " + bytes + " bytes, got " + payload.length);
        }
    }

    /** The data of a sized payload, whose size field must account for every byte after the fixed fields. */
    private static byte[] sized(Opcode op, byte[] payload) {
        if (payload.length < SIZED_BYTES) {
            throw new FrameException(WireError.BAD_LENGTH, op + "'s payload is at least " + SIZED_BYTES
                    + " bytes, got " + payload.length);
        }
        long size = ByteBuffer.wrap(payload, ADDRESS_BYTES, 4).getInt() & 0xFFFFFFFFL;
        if (size != payload.length - SIZED_BYTES) {
            throw new FrameException(WireError.BAD_LENGTH, op + " announces " + size + " data bytes but carries "
                    + (payload.length - SIZED_BYTES));
        }
        return Arrays.copyOfRange(payload, SIZED_BYTES, payload.length);
    }
}
