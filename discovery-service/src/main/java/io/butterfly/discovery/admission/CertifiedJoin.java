package io.butterfly.discovery.admission;

import io.butterfly.common.identity.NodeRole;

/**
 * Over mutual TLS a node joins only as itself: the node id and role its certificate names. With TLS off
 * ({@code butterfly.tls.enabled=false}) the transport knows no one and this checks nothing.
 */
final class CertifiedJoin implements AdmissionCheck {

    @Override
    public void check(JoinAttempt attempt) {
        NodeRole role = NodeRole.ofLabel(attempt.request().member().role()).orElse(null);
        if (role == null && attempt.caller().authenticated()) {
            throw EnvelopeFormat.invalid("member.role '" + attempt.request().member().role() + "' is no node role");
        }
        attempt.caller().requireIs(role, attempt.nodeId(), "join");
    }
}
