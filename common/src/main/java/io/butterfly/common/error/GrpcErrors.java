package io.butterfly.common.error;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import io.butterfly.proto.common.v1.ErrorCode;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.Optional;

/** Conversion between {@link ButterflyException} and gRPC statuses carrying an {@code ErrorInfo}. */
public final class GrpcErrors {

    public static final String DOMAIN = "butterfly.io";

    private GrpcErrors() {
    }

    public static StatusRuntimeException toStatus(ButterflyException e) {
        ErrorInfo info = ErrorInfo.newBuilder()
                .setDomain(DOMAIN)
                .setReason(e.code().name())
                .putMetadata("code", String.format("0x%04X", e.code().getNumber()))
                .putAllMetadata(e.context())
                .build();
        com.google.rpc.Status status = com.google.rpc.Status.newBuilder()
                .setCode(e.status().value())
                .setMessage(e.getMessage() == null ? e.code().name() : e.getMessage())
                .addDetails(Any.pack(info))
                .build();
        return StatusProto.toStatusRuntimeException(status);
    }

    /** The Butterfly error code in a gRPC error's details, if any. */
    public static Optional<ErrorCode> codeOf(Throwable t) {
        return errorInfo(t).map(info -> {
            try {
                return ErrorCode.valueOf(info.getReason());
            } catch (IllegalArgumentException e) {
                return ErrorCode.ERROR_CODE_UNSPECIFIED;
            }
        });
    }

    public static Optional<ErrorInfo> errorInfo(Throwable t) {
        com.google.rpc.Status status = StatusProto.fromThrowable(t);
        if (status == null) {
            return Optional.empty();
        }
        for (Any any : status.getDetailsList()) {
            if (any.is(ErrorInfo.class)) {
                try {
                    return Optional.of(any.unpack(ErrorInfo.class));
                } catch (InvalidProtocolBufferException e) {
                    return Optional.empty();
                }
            }
        }
        return Optional.empty();
    }

    /**
     * Any failure as a ButterflyException: domain errors keep their code and status, remote gRPC errors
     * keep theirs, bad arguments become INVALID_ARGUMENT, anything else INTERNAL without internals.
     */
    public static ButterflyException classify(Throwable t) {
        if (t instanceof ButterflyException be) {
            return be;
        }
        if (t instanceof StatusRuntimeException sre) {
            return fromRemote(sre, "remote call");
        }
        if (t instanceof IllegalArgumentException) {
            return new ButterflyException(ErrorCode.INVALID_MESSAGE, Status.Code.INVALID_ARGUMENT, t.getMessage());
        }
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, Status.Code.INTERNAL, "internal error: " + t.getClass().getSimpleName());
    }

    /** Rebuilds a ButterflyException from a remote gRPC error, keeping code, status and message. */
    public static ButterflyException fromRemote(Throwable t, String what) {
        Status s = Status.fromThrowable(t);
        ErrorCode code = codeOf(t).orElse(s.getCode() == Status.Code.DEADLINE_EXCEEDED ? ErrorCode.TIMEOUT : ErrorCode.INTERNAL_ERROR);
        return new ButterflyException(code, s.getCode(), what + ": " + s.getDescription(), errorInfo(t).map(ErrorInfo::getMetadataMap).orElse(java.util.Map.of()), t);
    }
}
