package io.butterfly.common.envelope;

import com.google.protobuf.ByteString;
import com.google.protobuf.MessageLite;
import io.butterfly.common.crypto.Ed25519;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.common.v1.ProtocolVersion;
import io.butterfly.proto.common.v1.SignedEnvelope;
import java.security.SecureRandom;

/**
 * Sealing and verifying control-message envelopes (docs/bootstrap-protocol.md §2.1, §9.1).
 *
 * <p>The signature covers the <em>canonical bytes</em>: the envelope with {@code signature} cleared,
 * serialized by protobuf. The envelope holds only scalar and bytes fields, which protobuf writes in
 * field-number order, defaults omitted, so every implementation produces the same bytes; the inner
 * message is signed as the exact payload bytes that travel.
 */
public final class ControlEnvelopes {

    /** The protocol this build speaks (docs/bootstrap-protocol.md: butterfly-bootstrap/1.0). */
    public static final ProtocolVersion CURRENT_VERSION = ProtocolVersion.newBuilder().setMajor(1).setMinor(0).setPatch(0).build();

    private static final SecureRandom RANDOM = new SecureRandom();

    private ControlEnvelopes() {
    }

    /** Signs {@code payload} as a {@code type} message from {@code sender}, timestamped {@code nowMs}. */
    public static SignedEnvelope seal(NodeIdentity identity, ProtocolVersion version, MessageType type, String sender,
                                      String recipient, MessageLite payload, long nowMs) {
        SignedEnvelope unsigned = SignedEnvelope.newBuilder()
                .setProtocolVersion(version)
                .setMessageType(type)
                .setMessageId(newMessageId())
                .setSender(sender)
                .setRecipient(recipient == null ? "" : recipient)
                .setTimestampMs(nowMs)
                .setPayload(payload.toByteString())
                .build();
        return sign(unsigned, identity);
    }

    public static SignedEnvelope seal(NodeIdentity identity, MessageType type, String sender, MessageLite payload, long nowMs) {
        return seal(identity, CURRENT_VERSION, type, sender, "", payload, nowMs);
    }

    /** (Re-)signs an envelope as it stands (tests use this to sign deliberately odd envelopes). */
    public static SignedEnvelope sign(SignedEnvelope envelope, NodeIdentity identity) {
        return envelope.toBuilder().setSignature(ByteString.copyFrom(identity.sign(canonicalBytes(envelope)))).build();
    }

    /** The bytes the signature covers: the envelope without its signature. */
    public static byte[] canonicalBytes(SignedEnvelope envelope) {
        return envelope.toBuilder().clearSignature().build().toByteArray();
    }

    /** True only if {@code envelope} carries a valid signature by {@code rawPublicKey} over its canonical bytes. */
    public static boolean verify(SignedEnvelope envelope, byte[] rawPublicKey) {
        return Ed25519.verify(rawPublicKey, canonicalBytes(envelope), envelope.getSignature().toByteArray());
    }

    /** A random non-zero 64-bit id: collisions between honest senders are negligible, so a repeat is a replay. */
    public static long newMessageId() {
        long id;
        do {
            id = RANDOM.nextLong();
        } while (id == 0);
        return id;
    }
}
