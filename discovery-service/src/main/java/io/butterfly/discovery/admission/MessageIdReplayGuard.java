package io.butterfly.discovery.admission;

import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import java.util.Map;

/**
 * Replay protection, second half (docs/bootstrap-protocol.md §9.2): an authentic message id is accepted once.
 * Ids are kept per sender for as long as {@link TimestampWindow} would still accept their message
 * (twice the window, for timestamps in the future); older ones are dropped because the window refuses them anyway.
 * Runs after the signature check so forged traffic cannot fill the table or burn honest ids.
 */
public final class MessageIdReplayGuard implements AdmissionCheck {

    private final long retainMs;
    private final SeenMessageIds seen;

    public MessageIdReplayGuard(long windowMs) {
        this(windowMs, SeenMessageIds.inMemory());
    }

    public MessageIdReplayGuard(long windowMs, SeenMessageIds seen) {
        this.retainMs = 2 * windowMs;
        this.seen = seen;
    }

    @Override
    public void check(JoinAttempt attempt) {
        check(attempt.message(), attempt.nowMs());
    }

    public void check(SignedMessage message, long nowMs) {
        String key = message.sender() + "/" + Long.toUnsignedString(message.messageId());
        if (!seen.firstSighting(key, nowMs, retainMs)) {
            throw new AdmissionException(ErrorCode.INVALID_MESSAGE, ErrorKind.ALREADY_EXISTS,
                    "message id " + Long.toUnsignedString(message.messageId()) + " from " + message.sender()
                            + " was already received: replay refused",
                    Map.of("check", "message_id_replay"));
        }
    }
}
