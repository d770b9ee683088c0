package io.butterfly.coordinator.inference.audit;

import io.butterfly.common.hash.Xxh64;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The verdict on one audited stage step (docs/verified-execution.md#audits): the serving worker's output hashes against
 * an auditor's, computed from the same input on the same layers, and, when they differ, a referee's third computation.
 * Butterfly computes the same bits for the same input whatever the worker, so the hashes of healthy workers are equal
 * and the one the other two disagree with computed wrong.
 */
public final class AuditVote {

    private AuditVote() {
    }

    /**
     * One worker's computation of the step.
     *
     * @param hashes each audited sequence's output hash (XXH64 of its rows), by sequence id
     */
    public record Computation(String nodeId, Map<String, Long> hashes) {
        public Computation {
            Objects.requireNonNull(nodeId, "nodeId");
            hashes = Map.copyOf(hashes);
        }

        /** Whether both computed the same output for every sequence the {@code other} audited. */
        boolean agreesWith(Computation other) {
            return other.hashes.entrySet().stream().allMatch(e -> e.getValue().equals(hashes.get(e.getKey())));
        }

        String describe() {
            StringBuilder b = new StringBuilder(nodeId).append(" computed");
            new TreeMap<>(hashes).forEach((seq, h) -> b.append(' ').append(seq).append('=').append(Xxh64.hex(h)));
            return b.toString();
        }
    }

    /** What the comparison says. */
    public sealed interface Verdict {
    }

    /** The auditor computed what the serving worker did: the step is verified. */
    public record Agreed() implements Verdict {
    }

    /** They differ: a third computation decides ({@link #decide}). */
    public record Disputed() implements Verdict {
    }

    /**
     * Two of three agree: {@code nodeId} is the minority, the worker that computed wrong.
     *
     * @param cause what was compared, for the node's Byzantine cause
     */
    public record Minority(String nodeId, String cause) implements Verdict {
    }

    /** All three differ: nothing tells which is right, so no one is evicted and the step is not verified. */
    public record Undecided(String cause) implements Verdict {
    }

    /** The serving worker's computation against the auditor's. */
    public static Verdict compare(Computation served, Computation auditor) {
        return served.agreesWith(auditor) ? new Agreed() : new Disputed();
    }

    /** A disputed step, decided by a referee's computation of it. */
    public static Verdict decide(Computation served, Computation auditor, Computation referee, String step) {
        boolean withServed = served.agreesWith(referee);
        boolean withAuditor = auditor.agreesWith(referee);
        String compared = step + ": " + served.describe() + "; auditor " + auditor.describe() + "; referee "
                + referee.describe();
        if (withServed && !withAuditor) {
            return new Minority(auditor.nodeId(), compared);
        }
        if (withAuditor && !withServed) {
            return new Minority(served.nodeId(), compared);
        }
        return new Undecided(compared);
    }
}
