package io.butterfly.discovery.admission;

import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.envelope.ControlEnvelopes;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.SignedEnvelope;
import java.util.Arrays;
import java.util.Map;

/**
 * The envelope's Ed25519 signature must verify over its canonical bytes (bootstrap-protocol.md §9.1).
 * For a join, the key is the one the request presents (whether it is trusted is {@link KeyTrust}'s
 * question); for later messages, the key the member joined with.
 */
public final class SignatureCheck implements AdmissionCheck {

    @Override
    public void check(JoinAttempt attempt) {
        byte[] key = attempt.request().getPublicKey().toByteArray();
        if (key.length != Ed25519.PUBLIC_KEY_BYTES) {
            throw new AdmissionException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT,
                    "public_key must be a raw 32-byte Ed25519 key, got " + key.length + " bytes");
        }
        byte[] memberKey = attempt.request().getMember().getPublicKey().toByteArray();
        if (memberKey.length > 0 && !Arrays.equals(memberKey, key)) {
            throw new AdmissionException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT,
                    "member.public_key differs from the join request's public_key");
        }
        verify(attempt.envelope(), key);
    }

    public void verify(SignedEnvelope envelope, byte[] key) {
        if (envelope.getSignature().isEmpty()) {
            throw new AdmissionException(ErrorCode.INVALID_SIGNATURE, ErrorKind.UNAUTHENTICATED,
                    envelope.getMessageType() + " from '" + envelope.getSender() + "' is unsigned",
                    Map.of("check", "unsigned"));
        }
        if (!ControlEnvelopes.verify(envelope, key)) {
            throw new AdmissionException(ErrorCode.INVALID_SIGNATURE, ErrorKind.UNAUTHENTICATED,
                    envelope.getMessageType() + " from '" + envelope.getSender()
                            + "' does not carry a valid signature by key " + Ed25519.hex(key),
                    Map.of("check", "signature"));
        }
    }
}
