package io.butterfly.common.identity;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Who is calling, as the transport authenticated it, and what it may do. With mutual TLS every caller presented a
 * certificate from the cluster CA, and the identity it names decides: a message that speaks for a node comes from
 * that node or from a coordinator. Refusals are PERMISSION_DENIED with the code discovery answers a key that may not
 * speak for a node id with ({@code INVALID_SIGNATURE}). With TLS off (the explicit insecure switch) nothing is known
 * about a caller and nothing is checked.
 */
public final class Caller {

    /** TLS off: every caller is let through. */
    public static final Caller PLAINTEXT = new Caller(false, null);
    /** TLS on, but the certificate names no identity (or no certificate was seen): node-scoped calls are refused. */
    public static final Caller UNIDENTIFIED = new Caller(true, null);

    private final boolean authenticated;
    private final PeerIdentity identity;

    private Caller(boolean authenticated, PeerIdentity identity) {
        this.authenticated = authenticated;
        this.identity = identity;
    }

    /** A caller whose certificate names {@code identity}. */
    public static Caller certified(PeerIdentity identity) {
        return new Caller(true, identity);
    }

    /** Whether the transport authenticated the caller (TLS on). */
    public boolean authenticated() {
        return authenticated;
    }

    public Optional<PeerIdentity> identity() {
        return Optional.ofNullable(identity);
    }

    /** Whether the caller is certified as exactly this node (discovery trusts such a node's first key). */
    public boolean isCertifiedAs(NodeRole role, String nodeId) {
        return identity != null && identity.role() == role && identity.nodeId().equals(nodeId);
    }

    /** {@code what} speaks for {@code role} {@code nodeId}: allowed from that node itself or from a coordinator. */
    public void requireSpeaksFor(NodeRole role, String nodeId, String what) {
        if (authenticated && !isCertifiedAs(role, nodeId) && !is(NodeRole.COORDINATOR)) {
            throw refused(what + " for " + role.label() + " '" + nodeId + "'", nodeId);
        }
    }

    /** {@code what} is sent by one of {@code roles} only. */
    public void requireRole(String what, NodeRole... roles) {
        if (authenticated && (identity == null || !Arrays.asList(roles).contains(identity.role()))) {
            throw refused(what + " (only from " + String.join(" or ", Arrays.stream(roles).map(NodeRole::label).toList())
                    + ")", null);
        }
    }

    /**
     * {@code what} comes from the node {@code nodeId} itself, in {@code role} (null: whatever its role), and from no
     * one else, coordinators included (a signed discovery message, a join).
     */
    public void requireIs(NodeRole role, String nodeId, String what) {
        boolean named = identity != null && identity.nodeId().equals(nodeId) && (role == null || identity.role() == role);
        if (authenticated && !named) {
            throw refused(what + " from " + (role == null ? "" : role.label() + " ") + "'" + nodeId + "'", nodeId);
        }
    }

    /** {@code what} comes from a worker among {@code workers} (a step's outcome: from a stage of its pipeline). */
    public void requireWorkerAmong(Collection<String> workers, String what) {
        if (authenticated && (identity == null || identity.role() != NodeRole.WORKER || !workers.contains(identity.nodeId()))) {
            throw refused(what + " (only from the stages " + workers + ")", null);
        }
    }

    private boolean is(NodeRole role) {
        return identity != null && identity.role() == role;
    }

    private ButterflyException refused(String what, String nodeId) {
        Map<String, String> context = new LinkedHashMap<>();
        context.put("check", "peer_identity");
        context.put("peer", identity == null ? "" : identity.dnsName());
        if (nodeId != null) {
            context.put("node_id", nodeId);
        }
        return new ButterflyException(ErrorCode.INVALID_SIGNATURE, ErrorKind.PERMISSION_DENIED, what + " refused: the"
                + " caller's certificate " + (identity == null ? "names no node" : "names " + identity), context, null);
    }

    @Override
    public String toString() {
        return !authenticated ? "plaintext caller" : identity == null ? "unidentified caller" : identity.toString();
    }
}
