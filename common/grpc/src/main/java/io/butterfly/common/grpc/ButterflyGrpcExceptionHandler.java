package io.butterfly.common.grpc;

import io.butterfly.common.error.ButterflyException;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.grpc.server.exception.GrpcExceptionHandler;

/**
 * The one gRPC exception handler of every Butterfly service (docs/errors.md): domain errors keep their
 * code and status; bad arguments become INVALID_ARGUMENT; anything else INTERNAL without internals.
 */
public class ButterflyGrpcExceptionHandler implements GrpcExceptionHandler {

    private static final Logger log = LoggerFactory.getLogger(ButterflyGrpcExceptionHandler.class);

    @Override
    public StatusException handleException(Throwable t) {
        if (t instanceof StatusRuntimeException sre) {
            return new StatusException(sre.getStatus(), sre.getTrailers());
        }
        if (!(t instanceof ButterflyException) && !(t instanceof IllegalArgumentException)) {
            log.error("unexpected error in a gRPC call", t);
        }
        ButterflyException e = GrpcErrors.classify(t);
        StatusRuntimeException sre = GrpcErrors.toStatus(e);
        return new StatusException(sre.getStatus(), sre.getTrailers());
    }
}
