package io.butterfly.discovery.admission;

/**
 * Feature-flag bitmap exchanged at join (docs/bootstrap-protocol.md §7.2). Two nodes use only the features both support,
 * so a newer node never sends something an older one cannot read.
 */
public record ProtocolFeatures(long bits) {

    public static final long COMPRESSION = 1L << 0;
    public static final long P2P_DISTRIBUTION = 1L << 1;
    public static final long ENCRYPTION = 1L << 2;
    public static final long ADAPTIVE_TIMEOUTS = 1L << 3;
    public static final long SPECULATIVE_EXECUTION = 1L << 4;

    public boolean supports(long feature) {
        return (bits & feature) != 0;
    }

    public ProtocolFeatures commonWith(ProtocolFeatures other) {
        return new ProtocolFeatures(bits & other.bits);
    }
}
