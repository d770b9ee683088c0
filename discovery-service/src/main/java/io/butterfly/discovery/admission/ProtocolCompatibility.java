package io.butterfly.discovery.admission;

import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.discovery.membership.ProtocolVersion;
import io.butterfly.common.error.ErrorCode;

/**
 * Version negotiation and feature flags at join (docs/bootstrap-protocol.md §7): the envelope's major must
 * match ours, and the joiner must support every feature this cluster requires.
 */
public final class ProtocolCompatibility implements AdmissionCheck {

    private final VersionNegotiation negotiation;
    private final long requiredFeatures;

    public ProtocolCompatibility(VersionNegotiation negotiation, long requiredFeatures) {
        this.negotiation = negotiation;
        this.requiredFeatures = requiredFeatures;
    }

    @Override
    public void check(JoinAttempt attempt) {
        agree(attempt);
    }

    /** The agreed version and common features; refuses an incompatible joiner. */
    public VersionNegotiation.Agreement agree(JoinAttempt attempt) {
        SignedMessage.Version v = attempt.message().version();
        ProtocolVersion theirs = new ProtocolVersion(v.major(), v.minor());
        ProtocolFeatures theirFeatures = new ProtocolFeatures(attempt.request().features());
        VersionNegotiation.Agreement agreement = negotiation.negotiate(theirs, theirFeatures)
                .orElseThrow(() -> new AdmissionException(ErrorCode.UNSUPPORTED_VERSION, ErrorKind.FAILED_PRECONDITION,
                        "protocol version " + v.major() + "." + v.minor() + "." + v.patch()
                                + " is not supported (this cluster speaks " + negotiation.ours().major() + ".x)"));
        long missing = requiredFeatures & ~theirFeatures.bits();
        if (missing != 0) {
            throw new AdmissionException(ErrorCode.UNSUPPORTED_VERSION, ErrorKind.FAILED_PRECONDITION,
                    String.format("the node lacks required protocol features 0x%x", missing));
        }
        return agreement;
    }
}
