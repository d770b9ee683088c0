package io.butterfly.discovery.admission;

/**
 * A join being judged: the signed message, its decoded payload, where it came from and when.
 *
 * @param message       as received
 * @param request       the message's payload
 * @param sourceAddress the peer's address as the transport saw it (host only: the rate limit is per host)
 * @param nowMs         the time the attempt is judged at
 */
public record JoinAttempt(SignedMessage message, Join request, String sourceAddress, long nowMs) {

    public String nodeId() {
        return request.member().nodeId();
    }
}
