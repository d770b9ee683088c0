package io.butterfly.discovery.membership;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import java.util.Map;

/** A control message refused by an admission check; the code travels in the gRPC error details. */
public class AdmissionException extends ButterflyException {
    public AdmissionException(ErrorCode code, ErrorKind kind, String message) {
        super(code, kind, message);
    }

    public AdmissionException(ErrorCode code, ErrorKind kind, String message, Map<String, String> context) {
        super(code, kind, message, context, null);
    }
}
