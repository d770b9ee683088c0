package io.butterfly.discovery.admission;

import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Which key may speak for which node id (docs/initialization-and-bootstrap.md §9.1 step 2).
 *
 * <p>A node listed in the configured trust store must present exactly that key. A node not listed is
 * refused, unless its certificate from the cluster CA names it (mutual TLS: the CA vouches for the id, the key signs
 * the message), or trust-on-first-use is on (off in production and in the Helm chart). Either way the first key
 * admitted under an id is pinned to it for the life of this service, and any other key under that id is a duplicate
 * ({@link DuplicateNodeId}).
 */
public final class KeyTrust implements AdmissionCheck {

    private final Map<String, String> trusted;
    private final boolean trustOnFirstUse;
    private final Map<String, String> pinned = new ConcurrentHashMap<>();

    /** @param trustedKeys node id → hex raw Ed25519 key */
    public KeyTrust(Map<String, String> trustedKeys, boolean trustOnFirstUse) {
        Map<String, String> keys = new HashMap<>();
        trustedKeys.forEach((id, hex) -> {
            byte[] raw = Ed25519.fromHex(hex);
            if (raw.length != Ed25519.PUBLIC_KEY_BYTES) {
                throw new IllegalArgumentException("trusted key of '" + id + "' is not a 32-byte hex Ed25519 key");
            }
            keys.put(id, Ed25519.hex(raw));
        });
        this.trusted = Map.copyOf(keys);
        this.trustOnFirstUse = trustOnFirstUse;
    }

    @Override
    public void check(JoinAttempt attempt) {
        String id = attempt.nodeId();
        String presented = Ed25519.hex(attempt.request().publicKey()).toLowerCase(Locale.ROOT);
        String expected = trusted.get(id);
        if (expected != null && !expected.equals(presented)) {
            throw untrusted(id, presented, "the trust store holds another key for this node id");
        }
        if (expected == null && !trustOnFirstUse && !attempt.certified()) {
            throw untrusted(id, presented, "the node id is not in the trust store and no certificate from the cluster CA"
                    + " names it (trust-on-first-use is off)");
        }
    }

    private static AdmissionException untrusted(String id, String key, String why) {
        return new AdmissionException(ErrorCode.INVALID_SIGNATURE, ErrorKind.PERMISSION_DENIED,
                "key " + key + " is not trusted for node '" + id + "': " + why, Map.of("check", "untrusted_key"));
    }

    /** The key pinned to {@code nodeId} by an earlier admitted join, if any. */
    public Optional<String> pinnedKey(String nodeId) {
        return Optional.ofNullable(pinned.get(nodeId));
    }

    /** Called once a join is admitted: from now on only this key speaks for the id. */
    public void pin(String nodeId, String keyHex) {
        pinned.putIfAbsent(nodeId, keyHex);
    }
}
