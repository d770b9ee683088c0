package io.butterfly.common.error;

import io.butterfly.proto.common.v1.ErrorCode;
import io.grpc.Status;
import java.util.Map;

/**
 * A failure that carries the spec's error code (bootstrap-protocol.md §8.1) and the gRPC status
 * that tells a caller what to do (DESIGN.md §5). Each service's single exception handler turns it
 * into a {@code google.rpc.Status} with an {@code ErrorInfo} detail.
 */
public class ButterflyException extends RuntimeException {

    private final ErrorCode code;
    private final Status.Code status;
    private final Map<String, String> context;

    public ButterflyException(ErrorCode code, Status.Code status, String message) {
        this(code, status, message, Map.of(), null);
    }

    public ButterflyException(ErrorCode code, Status.Code status, String message, Map<String, String> context, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.status = status;
        this.context = Map.copyOf(context);
    }

    public ErrorCode code() {
        return code;
    }

    public Status.Code status() {
        return status;
    }

    public Map<String, String> context() {
        return context;
    }
}
