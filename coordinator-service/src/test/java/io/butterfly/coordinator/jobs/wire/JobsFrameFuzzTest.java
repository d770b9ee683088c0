package io.butterfly.coordinator.jobs.wire;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.Timeout;

/**
 * A JOBS frame as the coordinator's listener reads it (docs/testing.md, fuzzing; a wire codec: the bytes any client
 * sends): any bytes decode to a message or are refused with a {@link FrameException} and its error code; nothing else
 * escapes. A message decoded re-encodes to a frame that decodes to the same message.
 */
@Timeout(10)
class JobsFrameFuzzTest {

    private static final int MAX = 1 << 16;

    @FuzzTest(maxDuration = "30s")
    void anyFrameDecodesOrIsRefused(byte[] frame) {
        decodesOrIsRefused(frame, MAX);
    }

    static void decodesOrIsRefused(byte[] frame, int max) {
        JobsMessage message;
        try {
            message = JobsCodec.decodeFrame(frame, max);
        } catch (FrameException refused) {
            assertThat(refused.error()).isNotNull();
            assertThat(JobsCodec.decodeFrame(JobsCodec.encode(refused.toMessage()), Integer.MAX_VALUE))
                    .isEqualTo(refused.toMessage());
            return;
        }
        assertThat(JobsCodec.decodeFrame(JobsCodec.encode(message), max)).isEqualTo(message);
    }
}
