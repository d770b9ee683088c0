package io.butterfly.common.envelope;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.proto.common.v1.ProtocolVersion;
import io.butterfly.proto.common.v1.SignedEnvelope;
import java.util.Arrays;
import org.junit.jupiter.api.Timeout;

/**
 * Signed control envelopes off the wire (docs/testing.md, fuzzing): verification answers true or false and never
 * throws, whatever the bytes, key or signature; and an honestly signed envelope, once any of its wire bytes are
 * changed, verifies only if it still says exactly what was signed (protobuf may read some changes, such as a field
 * given twice, back to the same message).
 */
// Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
@Timeout(10)
class ControlEnvelopesFuzzTest {

    private static final NodeIdentity SIGNER = NodeIdentity.ephemeral();

    @FuzzTest(maxDuration = "30s")
    void anyEnvelopeIsJudgedWithoutThrowing(FuzzedDataProvider data) {
        byte[] key = data.consumeBoolean() ? SIGNER.publicKey() : data.consumeBytes(data.consumeInt(0, 40));
        SignedEnvelope envelope;
        try {
            envelope = SignedEnvelope.parseFrom(data.consumeRemainingAsBytes());
        } catch (InvalidProtocolBufferException notAnEnvelope) {
            return;
        }
        boolean valid = ControlEnvelopes.verify(envelope, key);
        assertThat(valid).as("a signature nobody here made verified").isFalse();
    }

    @FuzzTest(maxDuration = "30s")
    void aChangedEnvelopeVerifiesOnlyIfItSaysTheSame(FuzzedDataProvider data) {
        SignedEnvelope honest = ControlEnvelopes.sign(SignedEnvelope.newBuilder()
                .setProtocolVersion(ProtocolVersion.newBuilder().setMajor(data.consumeInt(0, 3))
                        .setMinor(data.consumeInt(0, 3)).setPatch(data.consumeInt(0, 3)))
                .setMessageTypeValue(data.consumeInt(0, 1600))
                .setMessageId(data.consumeLong())
                .setSender(data.consumeString(24))
                .setRecipient(data.consumeString(24))
                .setTimestampMs(data.consumeLong())
                .setPayload(ByteString.copyFrom(data.consumeBytes(data.consumeInt(0, 256))))
                .build(), SIGNER);
        byte[] wire = honest.toByteArray();
        assertThat(ControlEnvelopes.verify(parse(wire), SIGNER.publicKey())).as("the honest envelope").isTrue();

        int changes = data.consumeInt(1, 4);
        for (int i = 0; i < changes && wire.length > 0; i++) {
            switch (data.consumeInt(0, 2)) {
                case 0 -> wire[data.consumeInt(0, wire.length - 1)] ^= (byte) data.consumeInt(1, 255);
                case 1 -> wire = Arrays.copyOf(wire, data.consumeInt(0, wire.length - 1));
                default -> {
                    byte[] tail = data.consumeBytes(data.consumeInt(1, 16));
                    byte[] longer = Arrays.copyOf(wire, wire.length + tail.length);
                    System.arraycopy(tail, 0, longer, wire.length, tail.length);
                    wire = longer;
                }
            }
        }
        SignedEnvelope received = parse(wire);
        if (received != null && ControlEnvelopes.verify(received, SIGNER.publicKey())) {
            assertThat(ControlEnvelopes.canonicalBytes(received)).isEqualTo(ControlEnvelopes.canonicalBytes(honest));
        }
    }

    private static SignedEnvelope parse(byte[] wire) {
        try {
            return SignedEnvelope.parseFrom(wire);
        } catch (InvalidProtocolBufferException e) {
            return null;
        }
    }
}
