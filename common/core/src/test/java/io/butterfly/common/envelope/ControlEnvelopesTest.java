package io.butterfly.common.envelope;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.common.v1.ProtocolVersion;
import io.butterfly.proto.common.v1.SignedEnvelope;
import java.util.List;
import java.util.Random;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class ControlEnvelopesTest {

    private final Random random = new Random(42);
    private final NodeIdentity identity = NodeIdentity.ephemeral();

    private SignedEnvelope randomEnvelope() {
        byte[] payload = new byte[random.nextInt(200)];
        random.nextBytes(payload);
        return ControlEnvelopes.seal(identity,
                ProtocolVersion.newBuilder().setMajor(1).setMinor(random.nextInt(5)).setPatch(random.nextInt(5)).build(),
                MessageType.JOIN_REQUEST, "node-" + random.nextInt(100), random.nextBoolean() ? "" : "discovery-0",
                io.butterfly.proto.common.v1.Tensor.newBuilder().setData(ByteString.copyFrom(payload)).build(), random.nextLong());
    }

    @Test
    void canonicalBytesSurviveAWireRoundTripAndVerify() throws Exception {
        for (int i = 0; i < 50; i++) {
            SignedEnvelope sent = randomEnvelope();
            SignedEnvelope received = SignedEnvelope.parseFrom(sent.toByteArray());
            assertArrayEquals(ControlEnvelopes.canonicalBytes(sent), ControlEnvelopes.canonicalBytes(received));
            assertTrue(ControlEnvelopes.verify(received, identity.publicKey()));
            assertFalse(ControlEnvelopes.verify(received, NodeIdentity.ephemeral().publicKey()), "another key");
        }
    }

    @Test
    void theSignatureCoversEveryField() {
        List<UnaryOperator<SignedEnvelope.Builder>> tampering = List.of(
                b -> b.setProtocolVersion(b.getProtocolVersion().toBuilder().setMajor(2)),
                b -> b.setMessageType(MessageType.LEAVE_NOTIFICATION),
                b -> b.setMessageId(b.getMessageId() + 1),
                b -> b.setSender(b.getSender() + "x"),
                b -> b.setRecipient(b.getRecipient() + "x"),
                b -> b.setTimestampMs(b.getTimestampMs() - 1),
                b -> b.setPayload(b.getPayload().concat(ByteString.copyFrom(new byte[] {1}))));
        for (int i = 0; i < 20; i++) {
            SignedEnvelope honest = randomEnvelope();
            for (UnaryOperator<SignedEnvelope.Builder> t : tampering) {
                assertFalse(ControlEnvelopes.verify(t.apply(honest.toBuilder()).build(), identity.publicKey()));
            }
            assertFalse(ControlEnvelopes.verify(honest.toBuilder().clearSignature().build(), identity.publicKey()), "unsigned");
        }
    }
}
