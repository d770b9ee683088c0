package io.butterfly.worker.config;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Fault injection for tests and demonstrations of verified execution (docs/verified-execution.md): this worker
 * corrupts its own outputs on purpose. Off by default, and refused at start-up unless explicitly enabled: a fraction
 * without {@code enabled=true} stops the worker, so a stray setting never makes a serving worker compute wrong.
 *
 * @param enabled         whether this worker may corrupt its outputs at all
 * @param flipBitFraction the fraction of its step outputs (hidden states, or logits on the last stage) in which one
 *                        bit is flipped after computing and before hashing, in [0, 1]
 * @param seed            which outputs and bits (the same seed corrupts the same steps of the same run)
 * @param flipBitLayer    the stage's layer (0: its first) whose output gets the flipped bit, inside the stage, instead
 *                        of the stage's output; -1 (the default): the stage's output. A bit flipped at a layer shows in
 *                        the per-layer snapshot hashes from that layer on (native stages only)
 * @param misreportChecksums whether this worker's checksum report claims another digest for the first file it loaded,
 *                        so that the coordinator's cross-validation fails it (docs/security.md: the way out of a
 *                        failed validation)
 */
@ConfigurationProperties("butterfly.worker.unsafe-fault-injection")
public record UnsafeFaultInjectionProperties(
        @DefaultValue("false") boolean enabled,
        @DefaultValue("0") double flipBitFraction,
        @DefaultValue("1") long seed,
        @DefaultValue("false") boolean misreportChecksums,
        @DefaultValue("-1") int flipBitLayer) {

    public UnsafeFaultInjectionProperties {
        if (flipBitLayer < -1) {
            throw new IllegalArgumentException(
                    "butterfly.worker.unsafe-fault-injection.flip-bit-layer must be -1 (the stage's output) or a layer of"
                            + " the stage (0: its first), got " + flipBitLayer);
        }
        if (!(flipBitFraction >= 0 && flipBitFraction <= 1)) {
            throw new IllegalArgumentException(
                    "butterfly.worker.unsafe-fault-injection.flip-bit-fraction must be in [0, 1], got " + flipBitFraction);
        }
        if (flipBitFraction > 0 && !enabled) {
            throw new IllegalArgumentException("butterfly.worker.unsafe-fault-injection.flip-bit-fraction="
                    + flipBitFraction + " makes this worker corrupt its outputs on purpose: it is refused unless"
                    + " butterfly.worker.unsafe-fault-injection.enabled=true is set too (tests and demonstrations only)");
        }
        if (misreportChecksums && !enabled) {
            throw new IllegalArgumentException("butterfly.worker.unsafe-fault-injection.misreport-checksums=true makes"
                    + " this worker fail cross-validation on purpose: it is refused unless"
                    + " butterfly.worker.unsafe-fault-injection.enabled=true is set too (tests and demonstrations only)");
        }
    }
}
