package io.butterfly.coordinator.inference.audit;

import io.butterfly.common.hash.Xxh64;
import java.nio.charset.StandardCharsets;

/**
 * Which steps are audited (docs/verified-execution.md#audits): a fraction of each sequence's steps, chosen by a keyed
 * hash of the sequence and the step's first position. The choice is the same on every coordinator replica (a
 * takeover audits what the owner would have) and a worker that does not know the key cannot tell which of its
 * outputs will be checked, so computing wrong only on the unaudited ones is a bet it loses at the rate below.
 */
public final class AuditSchedule {

    private final double fraction;
    private final long key;

    /**
     * @param fraction of steps audited, in [0, 1]: 0 audits none, 1 every step
     * @param key      what the choice is keyed with; the workers are not told it
     */
    public AuditSchedule(double fraction, long key) {
        if (!(fraction >= 0 && fraction <= 1)) {
            throw new IllegalArgumentException("the fraction of steps audited must be in [0, 1], got " + fraction);
        }
        this.fraction = fraction;
        this.key = key;
    }

    public double fraction() {
        return fraction;
    }

    /** Whether the step of {@code sequenceId} whose first new token is at {@code position} is audited. */
    public boolean audits(String sequenceId, int position) {
        if (fraction == 0) {
            return false;
        }
        if (fraction == 1) {
            return true;
        }
        byte[] id = sequenceId.getBytes(StandardCharsets.UTF_8);
        long h = Xxh64.ofLongs(new long[]{key, Xxh64.of(id), position}, 0, 3);
        // The top 53 bits as a uniform double in [0, 1).
        return (h >>> 11) * 0x1.0p-53 < fraction;
    }

    /**
     * Mean number of a worker's outputs before an audit catches one it computed wrong, when it corrupts each with
     * probability {@code corruptionRate}: each output is caught with probability {@code corruptionRate * fraction},
     * so the wait is geometric with that mean.
     */
    public double meanOutputsToDetection(double corruptionRate) {
        return 1 / (corruptionRate * fraction);
    }

    /**
     * The number of a worker's outputs within which an audit catches it with probability {@code confidence}: the
     * smallest n with {@code 1 - (1 - rate * fraction)^n >= confidence}.
     */
    public long outputsToDetection(double corruptionRate, double confidence) {
        double p = corruptionRate * fraction;
        if (p >= 1) {
            return 1;
        }
        return (long) Math.ceil(Math.log1p(-confidence) / Math.log1p(-p));
    }
}
