package io.butterfly.discovery.admission;

import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import java.util.Arrays;
import java.util.Map;

/**
 * The envelope's Ed25519 signature must verify over its canonical bytes (docs/bootstrap-protocol.md §9.1).
 * For a join, the key is the one the request presents (whether it is trusted is {@link KeyTrust}'s
 * question); for later messages, the key the member joined with.
 */
public final class SignatureCheck implements AdmissionCheck {

    @Override
    public void check(JoinAttempt attempt) {
        byte[] key = attempt.request().publicKey();
        if (key.length != Ed25519.PUBLIC_KEY_BYTES) {
            throw new AdmissionException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT,
                    "public_key must be a raw 32-byte Ed25519 key, got " + key.length + " bytes");
        }
        byte[] memberKey = attempt.request().member().publicKey();
        if (memberKey.length > 0 && !Arrays.equals(memberKey, key)) {
            throw new AdmissionException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT,
                    "member.public_key differs from the join request's public_key");
        }
        verify(attempt.message(), key);
    }

    public void verify(SignedMessage message, byte[] key) {
        if (message.signature().length == 0) {
            throw new AdmissionException(ErrorCode.INVALID_SIGNATURE, ErrorKind.UNAUTHENTICATED,
                    message.type() + " from '" + message.sender() + "' is unsigned",
                    Map.of("check", "unsigned"));
        }
        if (!Ed25519.verify(key, message.signedBytes().get(), message.signature())) {
            throw new AdmissionException(ErrorCode.INVALID_SIGNATURE, ErrorKind.UNAUTHENTICATED,
                    message.type() + " from '" + message.sender()
                            + "' does not carry a valid signature by key " + Ed25519.hex(key),
                    Map.of("check", "signature"));
        }
    }
}
