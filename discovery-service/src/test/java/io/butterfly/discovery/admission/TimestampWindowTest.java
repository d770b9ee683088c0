package io.butterfly.discovery.admission;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.butterfly.discovery.api.grpc.ControlMessages;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.SignedEnvelope;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The timestamp window at the ends of the long range, where a subtraction wraps. */
class TimestampWindowTest {

    private static final long NOW = 1_790_000_000_000L;
    private final TimestampWindow window = new TimestampWindow(Duration.ofMinutes(5));

    private static SignedMessage stamped(long timestampMs) {
        return ControlMessages.read(SignedEnvelope.newBuilder().setTimestampMs(timestampMs).build());
    }

    @Test
    void timestampsAtTheEndsOfTheRangeAreRefused() {
        // Long.MIN_VALUE + NOW is NOW - 2^63 ms: its skew is Long.MIN_VALUE, whose Math.abs is negative, so it passed.
        for (long ts : new long[] {Long.MIN_VALUE + NOW, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE + NOW - 1, 0}) {
            AdmissionException e = assertThrows(AdmissionException.class, () -> window.check(stamped(ts), NOW), () -> "" + ts);
            assertEquals(ErrorCode.INVALID_MESSAGE, e.code());
        }
        long w = Duration.ofMinutes(5).toMillis();
        assertDoesNotThrow(() -> window.check(stamped(NOW - w), NOW));
        assertDoesNotThrow(() -> window.check(stamped(NOW + w), NOW));
        assertThrows(AdmissionException.class, () -> window.check(stamped(NOW - w - 1), NOW));
        assertThrows(AdmissionException.class, () -> window.check(stamped(NOW + w + 1), NOW));
    }
}
