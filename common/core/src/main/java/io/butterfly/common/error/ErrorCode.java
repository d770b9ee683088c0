package io.butterfly.common.error;

/**
 * The protocol's error codes (docs/bootstrap-protocol.md §8.1): the number is what goes on the wire (the
 * {@code code} metadata of a gRPC {@code ErrorInfo}, {@code butterfly.common.v1.ErrorCode} in messages), the
 * high nibble of its upper byte its category. Whether a client retries a refusal is {@link RetryPolicy}'s.
 */
public enum ErrorCode {
    ERROR_CODE_UNSPECIFIED(0),
    // 0x1xxx: protocol
    INVALID_MESSAGE(0x1001),
    UNSUPPORTED_VERSION(0x1002),
    INVALID_SIGNATURE(0x1003),
    MESSAGE_TOO_LARGE(0x1004),
    /**
     * A step computed under another precision contract, or a tensor declared with other metadata, than the stage
     * expects (docs/verified-execution.md; Butterfly's own, the next free protocol code).
     */
    CONTRACT_MISMATCH(0x1005),
    // 0x2xxx: discovery
    CLUSTER_NAME_MISMATCH(0x2001),
    NO_PEERS_AVAILABLE(0x2002),
    // 0x3xxx: admission
    CLUSTER_FULL(0x3001),
    INSUFFICIENT_CAPABILITIES(0x3002),
    DUPLICATE_NODE_ID(0x3003),
    JOIN_RATE_LIMITED(0x3004),
    // 0x4xxx: consensus
    STALE_TERM(0x4001),
    LOG_INCONSISTENCY(0x4002),
    NO_QUORUM(0x4003),
    // 0x5xxx: model distribution
    MANIFEST_NOT_FOUND(0x5001),
    INVALID_MANIFEST(0x5002),
    CHECKSUM_MISMATCH(0x5003),
    WEIGHT_FILE_NOT_FOUND(0x5004),
    INSUFFICIENT_MEMORY(0x5005),
    /** A well-formed manifest signed by a key the node does not trust (Butterfly's own, next free model code). */
    UNTRUSTED_PUBLISHER(0x5006),
    // 0x6xxx: validation
    VALIDATION_FAILED(0x6001),
    MERKLE_ROOT_MISMATCH(0x6002),
    // 0xFxxx: general
    INTERNAL_ERROR(0xF001),
    TIMEOUT(0xF002);

    private final int number;

    ErrorCode(int number) {
        this.number = number;
    }

    /** The code's number on the wire. */
    public int number() {
        return number;
    }

    /** As the {@code code} metadata of an error detail shows it: {@code 0x1003}. */
    public String hex() {
        return String.format("0x%04X", number);
    }

    /** The code with this name, or {@link #ERROR_CODE_UNSPECIFIED} for a name this version does not know. */
    public static ErrorCode named(String name) {
        try {
            return valueOf(name);
        } catch (IllegalArgumentException | NullPointerException e) {
            return ERROR_CODE_UNSPECIFIED;
        }
    }
}
