package io.butterfly.discovery.admission;

import io.butterfly.common.identity.Caller;
import io.butterfly.common.identity.NodeRole;

/**
 * A join being judged: the signed message, its decoded payload, where it came from and when.
 *
 * @param message       as received
 * @param request       the message's payload
 * @param sourceAddress the peer's address as the transport saw it (host only: the rate limit is per host)
 * @param nowMs         the time the attempt is judged at
 * @param caller        who the transport authenticated (mutual TLS: the certificate's identity)
 */
public record JoinAttempt(SignedMessage message, Join request, String sourceAddress, long nowMs, Caller caller) {

    public String nodeId() {
        return request.member().nodeId();
    }

    /** Whether the caller's certificate names the joining node in the role it joins as. */
    public boolean certified() {
        return NodeRole.ofLabel(request.member().role()).map(role -> caller.isCertifiedAs(role, nodeId())).orElse(false);
    }
}
