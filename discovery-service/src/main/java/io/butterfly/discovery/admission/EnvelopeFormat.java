package io.butterfly.discovery.admission;

import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Parser;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.proto.common.v1.MessageType;
import io.butterfly.proto.common.v1.SignedEnvelope;

/**
 * Structural checks on an envelope before anything else looks at it: the expected message type, a
 * sender, a recipient that is us (or nobody), no unknown envelope fields (their canonical form would be
 * ambiguous, see envelope.proto), and a payload that decodes.
 */
public final class EnvelopeFormat {

    private final String ourNodeId;

    public EnvelopeFormat(String ourNodeId) {
        this.ourNodeId = ourNodeId;
    }

    public <T> T open(SignedEnvelope envelope, MessageType expected, Parser<T> parser) {
        if (envelope.getMessageType() != expected) {
            throw invalid("expected a " + expected + " envelope, got " + envelope.getMessageType());
        }
        if (!envelope.getUnknownFields().asMap().isEmpty()) {
            throw invalid("the envelope carries fields this protocol version does not define");
        }
        if (envelope.getSender().isBlank()) {
            throw invalid("the envelope names no sender");
        }
        if (!envelope.getRecipient().isEmpty() && !envelope.getRecipient().equals(ourNodeId)) {
            throw invalid("the envelope is addressed to '" + envelope.getRecipient() + "', not to " + ourNodeId);
        }
        if (!envelope.hasProtocolVersion()) {
            throw invalid("the envelope has no protocol_version");
        }
        try {
            return parser.parseFrom(envelope.getPayload());
        } catch (InvalidProtocolBufferException e) {
            throw invalid("the " + expected + " payload does not decode: " + e.getMessage());
        }
    }

    static AdmissionException invalid(String message) {
        return new AdmissionException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT, message);
    }
}
