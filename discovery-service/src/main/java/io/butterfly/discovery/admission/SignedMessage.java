package io.butterfly.discovery.admission;

import java.util.function.Supplier;

/**
 * A signed control message as admission judges it (docs/bootstrap-protocol.md §2.1, §9.1): the envelope's fields,
 * the bytes its signature covers and its still encoded payload, as the transport edge read them off the wire.
 *
 * @param type          the message type's name ({@code JOIN_REQUEST}, {@code HEARTBEAT}, ...)
 * @param recipient     the node it is addressed to; empty for whoever serves the call
 * @param version       the envelope's protocol version; null when it carries none
 * @param unknownFields whether the envelope carried fields this protocol version does not define (its canonical
 *                      form would then depend on how they are re-emitted)
 * @param signature     the Ed25519 signature; empty when unsigned
 * @param signedBytes   the canonical bytes the signature covers (the envelope without its signature), made only
 *                      when a signature is checked: a flood refused by the rate limit costs no serialization
 */
public record SignedMessage(String type, String sender, String recipient, long messageId, long timestampMs,
                            Version version, boolean unknownFields, byte[] payload, byte[] signature,
                            Supplier<byte[]> signedBytes) {

    /** A full protocol version as an envelope states it. */
    public record Version(int major, int minor, int patch) {
    }
}
