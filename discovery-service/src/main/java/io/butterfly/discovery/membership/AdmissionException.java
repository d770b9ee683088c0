package io.butterfly.discovery.membership;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.proto.common.v1.ErrorCode;
import io.grpc.Status;

/** A join refused by an admission check. */
public class AdmissionException extends ButterflyException {
    public AdmissionException(ErrorCode code, Status.Code status, String message) {
        super(code, status, message);
    }
}
