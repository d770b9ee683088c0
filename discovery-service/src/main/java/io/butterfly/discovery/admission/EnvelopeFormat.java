package io.butterfly.discovery.admission;

import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.discovery.membership.AdmissionException;

/**
 * Structural checks on an envelope before anything else looks at it: the expected message type, a
 * sender, a recipient that is us (or nobody), no unknown envelope fields (their canonical form would be
 * ambiguous, see envelope.proto), a protocol version, and a payload that decodes.
 */
public final class EnvelopeFormat {

    private final String ourNodeId;

    public EnvelopeFormat(String ourNodeId) {
        this.ourNodeId = ourNodeId;
    }

    public <T> T open(SignedMessage message, String expected, PayloadReader<T> reader) {
        if (!message.type().equals(expected)) {
            throw invalid("expected a " + expected + " envelope, got " + message.type());
        }
        if (message.unknownFields()) {
            throw invalid("the envelope carries fields this protocol version does not define");
        }
        if (message.sender().isBlank()) {
            throw invalid("the envelope names no sender");
        }
        if (!message.recipient().isEmpty() && !message.recipient().equals(ourNodeId)) {
            throw invalid("the envelope is addressed to '" + message.recipient() + "', not to " + ourNodeId);
        }
        if (message.version() == null) {
            throw invalid("the envelope has no protocol_version");
        }
        try {
            return reader.read(message.payload());
        } catch (IllegalArgumentException e) {
            throw invalid("the " + expected + " payload does not decode: " + e.getMessage());
        }
    }

    static AdmissionException invalid(String message) {
        return new AdmissionException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT, message);
    }
}
