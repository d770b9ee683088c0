package io.butterfly.common.error;

/**
 * What kind of failure an error is, and so what its caller should do (the canonical error model of Google's API
 * design, which gRPC's status codes and the HTTP statuses of the REST APIs both follow). Domain code says which
 * kind it throws; the transports choose their status from it, once: gRPC in {@code GrpcErrors}, HTTP in each
 * service's problem handler.
 */
public enum ErrorKind {
    /** The request is malformed; sending it again unchanged fails again. */
    INVALID_ARGUMENT,
    /** The system is not in a state to do this; do not retry until the state changes. */
    FAILED_PRECONDITION,
    /** A conflict higher up (an older term, a superseded assignment): retry the whole operation, not the call. */
    ABORTED,
    /** Transient: retry the same call, with backoff. */
    UNAVAILABLE,
    /** Out of capacity or rate-limited: retry later. */
    RESOURCE_EXHAUSTED,
    /** What was asked for does not exist. */
    NOT_FOUND,
    /** It exists already (a node id taken by another key, a message id seen before). */
    ALREADY_EXISTS,
    /** The caller could not be authenticated (no or a forged signature). */
    UNAUTHENTICATED,
    /** The caller is known but not allowed (an untrusted key). */
    PERMISSION_DENIED,
    /** Data was corrupted (a checksum or Merkle root that does not match). */
    DATA_LOSS,
    /** The deadline passed before the work finished. */
    DEADLINE_EXCEEDED,
    /** The caller gave up. */
    CANCELLED,
    /** A value outside the range the operation accepts (past the end of a file, say). */
    OUT_OF_RANGE,
    /** The operation is not implemented by this peer. */
    UNIMPLEMENTED,
    /** A bug or an unexpected failure; nothing the caller can do. */
    INTERNAL,
    /** A remote failure that said nothing more. */
    UNKNOWN
}
