package io.butterfly.discovery.admission;

import io.butterfly.discovery.membership.ProtocolVersion;
import java.util.Optional;

/**
 * Protocol version negotiation (docs/bootstrap-protocol.md §7.1): majors must match; the lower minor is used because the
 * node with the higher minor is the one obliged to keep a compatibility layer.
 */
public final class VersionNegotiation {

    /** The agreed protocol: version plus the feature set both sides support. */
    public record Agreement(ProtocolVersion version, ProtocolFeatures features) {
    }

    private final ProtocolVersion ours;
    private final ProtocolFeatures ourFeatures;

    public VersionNegotiation(ProtocolVersion ours, ProtocolFeatures ourFeatures) {
        this.ours = ours;
        this.ourFeatures = ourFeatures;
    }

    public ProtocolVersion ours() {
        return ours;
    }

    public static boolean compatible(ProtocolVersion a, ProtocolVersion b) {
        return a.major() == b.major();
    }

    /** Empty when the majors differ (the caller rejects with the version-mismatch error code). */
    public Optional<Agreement> negotiate(ProtocolVersion theirs, ProtocolFeatures theirFeatures) {
        if (!compatible(ours, theirs)) {
            return Optional.empty();
        }
        ProtocolVersion chosen = new ProtocolVersion(ours.major(), Math.min(ours.minor(), theirs.minor()));
        return Optional.of(new Agreement(chosen, ourFeatures.commonWith(theirFeatures)));
    }
}
