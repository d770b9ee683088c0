package io.butterfly.common.error;

import java.util.Map;

/**
 * A failure that carries the protocol's error code ({@link ErrorCode}) and its {@link ErrorKind}, which tells a
 * caller what to do. Each service's single exception handler turns it into a gRPC status with an
 * {@code ErrorInfo} detail, or a problem document over REST.
 */
public class ButterflyException extends RuntimeException {

    private final ErrorCode code;
    private final ErrorKind kind;
    private final Map<String, String> context;

    public ButterflyException(ErrorCode code, ErrorKind kind, String message) {
        this(code, kind, message, Map.of(), null);
    }

    public ButterflyException(ErrorCode code, ErrorKind kind, String message, Map<String, String> context, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.kind = kind;
        this.context = Map.copyOf(context);
    }

    /**
     * Any failure as a ButterflyException: ours keep their code and kind, a bad argument is INVALID_ARGUMENT,
     * anything else INTERNAL, without its internals (the caller sees its class name only).
     */
    public static ButterflyException of(Throwable t) {
        if (t instanceof ButterflyException be) {
            return be;
        }
        if (t instanceof IllegalArgumentException) {
            return new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT, t.getMessage());
        }
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.INTERNAL, "internal error: " + t.getClass().getSimpleName());
    }

    public ErrorCode code() {
        return code;
    }

    public ErrorKind kind() {
        return kind;
    }

    public Map<String, String> context() {
        return context;
    }
}
