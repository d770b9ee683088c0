package io.butterfly.common.grpc;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.Map;
import java.util.Optional;

/**
 * The one place an error's gRPC status is chosen: {@link ButterflyException} to and from gRPC statuses carrying
 * an {@code ErrorInfo} (reason: the error code's name; metadata {@code code}: its number, and the context).
 */
public final class GrpcErrors {

    public static final String DOMAIN = "butterfly.io";

    private GrpcErrors() {
    }

    /** The gRPC status code of an error kind (the kinds are named after the canonical codes). */
    public static Status.Code statusCode(ErrorKind kind) {
        return Status.Code.valueOf(kind.name());
    }

    /** The error kind of a gRPC status code; OK, which is no error, reads as UNKNOWN. */
    public static ErrorKind kindOf(Status.Code code) {
        return code == Status.Code.OK ? ErrorKind.UNKNOWN : ErrorKind.valueOf(code.name());
    }

    /** An error code as the protocol's messages carry it. */
    public static io.butterfly.proto.common.v1.ErrorCode toProto(ErrorCode code) {
        return io.butterfly.proto.common.v1.ErrorCode.forNumber(code.number());
    }

    /** An error code a message carried; a number this version does not know reads as unspecified. */
    public static ErrorCode fromProto(io.butterfly.proto.common.v1.ErrorCode code) {
        return ErrorCode.named(code.name());
    }

    public static StatusRuntimeException toStatus(ButterflyException e) {
        ErrorInfo info = ErrorInfo.newBuilder()
                .setDomain(DOMAIN)
                .setReason(e.code().name())
                .putMetadata("code", e.code().hex())
                .putAllMetadata(e.context())
                .build();
        com.google.rpc.Status status = com.google.rpc.Status.newBuilder()
                .setCode(statusCode(e.kind()).value())
                .setMessage(e.getMessage() == null ? e.code().name() : e.getMessage())
                .addDetails(Any.pack(info))
                .build();
        return StatusProto.toStatusRuntimeException(status);
    }

    /** The Butterfly error code in a gRPC error's details, if any. */
    public static Optional<ErrorCode> codeOf(Throwable t) {
        return errorInfo(t).map(info -> ErrorCode.named(info.getReason()));
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

    /** Any failure as a ButterflyException: a remote gRPC error keeps its code and status, the rest as {@link ButterflyException#of}. */
    public static ButterflyException classify(Throwable t) {
        return t instanceof StatusRuntimeException sre ? fromRemote(sre, "remote call") : ButterflyException.of(t);
    }

    /** Rebuilds a ButterflyException from a remote gRPC error, keeping code, status and message. */
    public static ButterflyException fromRemote(Throwable t, String what) {
        Status s = Status.fromThrowable(t);
        ErrorCode code = codeOf(t).orElse(s.getCode() == Status.Code.DEADLINE_EXCEEDED ? ErrorCode.TIMEOUT : ErrorCode.INTERNAL_ERROR);
        return new ButterflyException(code, kindOf(s.getCode()), what + ": " + s.getDescription(),
                errorInfo(t).map(ErrorInfo::getMetadataMap).orElse(Map.of()), t);
    }
}
