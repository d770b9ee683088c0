package io.butterfly.coordinator.jobs.wire;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The JOBS wire format: every message round-trips, every malformed frame is refused with its error code. */
class JobsCodecTest {

    private static final int MAX = 1 << 16;

    @Test
    void randomMessagesRoundTrip() {
        Random random = new Random(48);
        for (int i = 0; i < 2_000; i++) {
            JobsMessage m = randomMessage(random);
            byte[] frame = JobsCodec.encode(m);
            assertThat(JobsCodec.decodeFrame(frame, MAX)).isEqualTo(m);
            FrameHeader h = JobsCodec.header(Arrays.copyOf(frame, JobsCodec.HEADER_BYTES), MAX);
            assertThat(h.opcode()).isEqualTo(m.opcode().code());
            assertThat(h.payloadLength()).isEqualTo(frame.length - JobsCodec.HEADER_BYTES);
        }
    }

    @Test
    void theHeaderIsBigEndianAsTheSpecificationLaysItOut() {
        byte[] frame = JobsCodec.encode(new JobsMessage.JobRequest(0x0102030405060708L, 1, -1));
        assertThat(Arrays.copyOf(frame, 10)).containsExactly('J', 'O', 'B', 'S', 1, 0, 0, 0, 0, 24);
        assertThat(Arrays.copyOfRange(frame, 10, 18)).containsExactly(1, 2, 3, 4, 5, 6, 7, 8);
        assertThat(Arrays.copyOfRange(frame, 26, 34)).containsOnly(0xFF);
        byte[] error = JobsCodec.encode(new JobsMessage.ErrorFrame(7, "é"));
        assertThat(Arrays.copyOfRange(error, 4, error.length)).containsExactly(1, 3, 0, 0, 0, 4, 0, 7, 0xC3, 0xA9);
    }

    @Test
    void badMagicIsRefusedFirst() {
        byte[] frame = JobsCodec.encode(new JobsMessage.JobRequest(1, 2, 3));
        frame[0] = 'X';
        frame[4] = 2; // a bad version too: the magic is checked first
        assertRefused(frame, WireError.BAD_MAGIC);
    }

    @Test
    void version2IsRefused() {
        byte[] frame = JobsCodec.encode(new JobsMessage.JobRequest(1, 2, 3));
        frame[4] = 2;
        assertRefused(frame, WireError.UNSUPPORTED_VERSION);
    }

    @Test
    void aPayloadOverTheMaximumIsRefusedFromItsHeaderAlone() {
        byte[] header = header(0, 0xFFFFFFFFL);
        assertThatThrownBy(() -> JobsCodec.header(header, MAX)).isInstanceOfSatisfying(FrameException.class,
                e -> assertThat(e.error()).isEqualTo(WireError.PAYLOAD_TOO_LARGE));
        assertThat(JobsCodec.header(header(1, MAX), MAX).payloadLength()).isEqualTo(MAX);
        assertThatThrownBy(() -> JobsCodec.header(header(1, MAX + 1L), MAX)).isInstanceOfSatisfying(
                FrameException.class, e -> assertThat(e.error()).isEqualTo(WireError.PAYLOAD_TOO_LARGE));
    }

    @Test
    void aTruncatedHeaderIsRefused() {
        byte[] frame = JobsCodec.encode(new JobsMessage.JobRequest(1, 2, 3));
        assertRefused(Arrays.copyOf(frame, 9), WireError.BAD_LENGTH);
        assertRefused(new byte[0], WireError.BAD_LENGTH);
    }

    @Test
    void anUnknownOpcodeIsRefusedOnceItsPayloadIsRead() {
        FrameHeader h = JobsCodec.header(header(9, 3), MAX);
        assertThat(h.opcode()).isEqualTo(9);
        assertThatThrownBy(() -> JobsCodec.decode(9, new byte[3])).isInstanceOfSatisfying(FrameException.class,
                e -> assertThat(e.error()).isEqualTo(WireError.UNKNOWN_OPCODE));
    }

    @Test
    void lengthsThatDoNotFitTheFixedFieldsAreRefused() {
        for (int len : new int[] {0, 8, 23, 25}) {
            assertDecodeRefused(Opcode.JOB_REQUEST, new byte[len], WireError.BAD_LENGTH);
        }
        for (Opcode op : new Opcode[] {Opcode.RESULT, Opcode.JOB_RESPONSE}) {
            assertDecodeRefused(op, new byte[27], WireError.BAD_LENGTH);
            byte[] sized = ByteBuffer.allocate(32).putLong(1).putLong(2).putLong(3).putInt(5).array();
            assertDecodeRefused(op, sized, WireError.BAD_LENGTH); // announces 5, carries 4
            byte[] huge = ByteBuffer.allocate(28).putLong(1).putLong(2).putLong(3).putInt(-1).array();
            assertDecodeRefused(op, huge, WireError.BAD_LENGTH);
        }
        assertDecodeRefused(Opcode.ERROR, new byte[1], WireError.BAD_LENGTH);
        assertDecodeRefused(Opcode.RESULT_ACK, new byte[24], WireError.BAD_LENGTH);
        byte[] ack = new byte[25];
        ack[24] = 2;
        assertDecodeRefused(Opcode.RESULT_ACK, ack, WireError.BAD_LENGTH);
    }

    @Test
    void aFrameWhosePayloadIsShorterOrLongerThanItsHeaderSaysIsRefused() {
        byte[] frame = JobsCodec.encode(new JobsMessage.Result(1, 2, 3, new byte[] {9, 9}));
        assertRefused(Arrays.copyOf(frame, frame.length - 1), WireError.BAD_LENGTH);
        assertRefused(Arrays.copyOf(frame, frame.length + 1), WireError.BAD_LENGTH);
    }

    /**
     * Fuzz-style: random bytes, and valid frames with random bytes flipped, cut or appended, decode to a message or are
     * refused with a {@link FrameException}; a message that decodes re-encodes to a frame that decodes to it again.
     */
    @Test
    void anyBytesDecodeOrAreRefused() {
        Random random = new Random(4848);
        for (int i = 0; i < 100_000; i++) {
            byte[] bytes;
            if (random.nextInt(4) == 0) {
                bytes = new byte[random.nextInt(64)];
                random.nextBytes(bytes);
            } else {
                bytes = mutate(JobsCodec.encode(randomMessage(random)), random);
            }
            JobsFrameFuzzTest.decodesOrIsRefused(bytes, MAX);
        }
    }

    static JobsMessage randomMessage(Random random) {
        long seed = random.nextLong();
        long step = random.nextInt(3) == 0 ? random.nextLong() : random.nextInt(100);
        long position = random.nextInt(3) == 0 ? random.nextLong() : random.nextInt(1_000_000);
        byte[] data = new byte[random.nextInt(4) == 0 ? 0 : random.nextInt(2_000)];
        random.nextBytes(data);
        switch (random.nextInt(5)) {
            case 0:
                return new JobsMessage.JobRequest(seed, step, position);
            case 1:
                return new JobsMessage.JobResponse(seed, step, position, data);
            case 2:
                return new JobsMessage.Result(seed, step, position, data);
            case 3:
                return new JobsMessage.ResultAck(seed, step, position, random.nextBoolean());
            default:
                StringBuilder text = new StringBuilder();
                for (int c = random.nextInt(40); c > 0; c--) {
                    text.appendCodePoint(random.nextBoolean() ? 'a' + random.nextInt(26) : 0x80 + random.nextInt(0x3000));
                }
                return new JobsMessage.ErrorFrame(random.nextInt(0x10000), text.toString());
        }
    }

    private static byte[] mutate(byte[] frame, Random random) {
        switch (random.nextInt(3)) {
            case 0:
                for (int flips = 1 + random.nextInt(3); flips > 0; flips--) {
                    frame[random.nextInt(Math.min(frame.length, 40))] ^= (byte) (1 << random.nextInt(8));
                }
                return frame;
            case 1:
                return Arrays.copyOf(frame, random.nextInt(frame.length));
            default:
                byte[] longer = Arrays.copyOf(frame, frame.length + 1 + random.nextInt(8));
                return longer;
        }
    }

    private static byte[] header(int opcode, long length) {
        return ByteBuffer.allocate(10).put(JobsCodec.MAGIC).put((byte) 1).put((byte) opcode).putInt((int) length).array();
    }

    private static void assertRefused(byte[] frame, WireError error) {
        assertThatThrownBy(() -> JobsCodec.decodeFrame(frame, MAX)).isInstanceOfSatisfying(FrameException.class,
                e -> assertThat(e.error()).isEqualTo(error));
    }

    private static void assertDecodeRefused(Opcode op, byte[] payload, WireError error) {
        assertThatThrownBy(() -> JobsCodec.decode(op.code(), payload)).isInstanceOfSatisfying(FrameException.class,
                e -> assertThat(e.error()).as("%s with %d bytes", op, payload.length).isEqualTo(error));
    }
}
