package io.butterfly.discovery.membership;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.proto.common.v1.ErrorCode;
import io.grpc.Status;
import java.util.Map;

/** A control message refused by an admission check; the code travels in the gRPC error details. */
public class AdmissionException extends ButterflyException {
    public AdmissionException(ErrorCode code, Status.Code status, String message) {
        super(code, status, message);
    }

    public AdmissionException(ErrorCode code, Status.Code status, String message, Map<String, String> context) {
        super(code, status, message, context, null);
    }
}
