package io.butterfly.discovery.admission;

import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipStore;
import io.butterfly.common.error.ErrorCode;
import java.util.Optional;

/**
 * Two processes cannot share a node id (docs/initialization-and-bootstrap.md §9.3 step 3): the same id with
 * a different key than the current member's, or than the key pinned on first use, is a duplicate. The
 * same id with the same key is that node restarting, which replaces its entry.
 */
public final class DuplicateNodeId implements AdmissionCheck {

    private final MembershipStore registry;
    private final KeyTrust trust;

    public DuplicateNodeId(MembershipStore registry, KeyTrust trust) {
        this.registry = registry;
        this.trust = trust;
    }

    @Override
    public void check(JoinAttempt attempt) {
        String id = attempt.nodeId();
        String presented = Ed25519.hex(attempt.request().publicKey());
        Optional<MemberView> existing = registry.member(id);
        Optional<String> holder = existing.map(MemberView::publicKeyHex).or(() -> trust.pinnedKey(id));
        if (holder.isPresent() && !holder.get().equals(presented)) {
            String where = existing.map(m -> " (a member at " + m.host() + ":" + m.grpcPort() + ")").orElse(" (pinned earlier)");
            throw new AdmissionException(ErrorCode.DUPLICATE_NODE_ID, ErrorKind.ALREADY_EXISTS,
                    "node id '" + id + "' already belongs to another key" + where);
        }
    }
}
