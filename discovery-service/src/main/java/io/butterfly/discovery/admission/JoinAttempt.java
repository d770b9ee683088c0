package io.butterfly.discovery.admission;

import io.butterfly.proto.common.v1.SignedEnvelope;
import io.butterfly.proto.discovery.v1.JoinRequest;

/**
 * A join being judged: the signed envelope, its decoded payload, where it came from and when.
 *
 * @param envelope      as received
 * @param request       the envelope's payload
 * @param sourceAddress the peer's address as the transport saw it (host only: the rate limit is per host)
 * @param nowMs         the time the attempt is judged at
 */
public record JoinAttempt(SignedEnvelope envelope, JoinRequest request, String sourceAddress, long nowMs) {

    public String nodeId() {
        return request.getMember().getNodeId();
    }
}
