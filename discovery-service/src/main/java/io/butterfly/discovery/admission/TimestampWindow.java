package io.butterfly.discovery.admission;

import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import java.time.Duration;
import java.util.Map;

/**
 * Replay protection, first half (docs/bootstrap-protocol.md §9.2): a message stamped more than the window
 * away from our clock, in either direction, is refused. This bounds how long message ids must be
 * remembered ({@link MessageIdReplayGuard}).
 */
public final class TimestampWindow implements AdmissionCheck {

    private final long windowMs;

    public TimestampWindow(Duration window) {
        this.windowMs = window.toMillis();
    }

    public long windowMs() {
        return windowMs;
    }

    @Override
    public void check(JoinAttempt attempt) {
        check(attempt.message(), attempt.nowMs());
    }

    public void check(SignedMessage message, long nowMs) {
        long ts = message.timestampMs();
        // Bounds, not Math.abs(ts - now): that difference wraps for a timestamp near Long.MIN_VALUE, and a skew
        // of exactly Long.MIN_VALUE has a negative absolute value, which passed.
        if (ts < nowMs - windowMs || ts > nowMs + windowMs) {
            throw new AdmissionException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT,
                    "message timestamp is " + (ts < nowMs ? Long.toUnsignedString(nowMs - ts) + " ms old"
                            : Long.toUnsignedString(ts - nowMs) + " ms in the future")
                            + " (window ±" + windowMs + " ms): stale or replayed",
                    Map.of("check", "timestamp_window"));
        }
    }
}
