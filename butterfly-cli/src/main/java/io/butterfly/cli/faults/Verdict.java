package io.butterfly.cli.faults;

import java.util.List;
import java.util.Locale;

/**
 * The checker's answer for one or more schedules.
 *
 * @param schedules      schedules run
 * @param faults         faults injected
 * @param requests       requests the load sent
 * @param completed      of them, completed with the fault-free tokens
 * @param failedClearly  failed with a reason the client was told
 * @param lost           acknowledged control-log writes missing afterwards (task starts at some replica, epochs)
 * @param wrongTokens    requests that gave a token the fault-free run did not, or ended without a reason
 * @param splitBrain     terms with two leaders, and committed log entries the replicas disagree on
 * @param readyAfterMs   per schedule, from the end of its last fault until the cluster was READY again
 */
public record Verdict(int schedules, int faults, long requests, long completed, long failedClearly, long lost,
                      long wrongTokens, long splitBrain, List<Long> readyAfterMs) {

    public Verdict {
        readyAfterMs = List.copyOf(readyAfterMs);
    }

    public boolean clean() {
        return lost == 0 && wrongTokens == 0 && splitBrain == 0 && readyAfterMs.size() == schedules;
    }

    public Verdict plus(Verdict o) {
        List<Long> ready = new java.util.ArrayList<>(readyAfterMs);
        ready.addAll(o.readyAfterMs);
        return new Verdict(schedules + o.schedules, faults + o.faults, requests + o.requests, completed + o.completed,
                failedClearly + o.failedClearly, lost + o.lost, wrongTokens + o.wrongTokens, splitBrain + o.splitBrain, ready);
    }

    public static Verdict none() {
        return new Verdict(0, 0, 0, 0, 0, 0, 0, 0, List.of());
    }

    /** The summary line: {@code schedules=.. faults=.. lost=0 wrong_tokens=0 split_brain=0 ready_after_last_fault_s_p50=.. p99=..}. */
    public String line() {
        return String.format(Locale.ROOT, "schedules=%d faults=%d requests=%d completed=%d failed_clearly=%d lost=%d"
                        + " wrong_tokens=%d split_brain=%d ready_after_last_fault_s_p50=%.2f p99=%.2f", schedules, faults,
                requests, completed, failedClearly, lost, wrongTokens, splitBrain, percentile(50) / 1e3, percentile(99) / 1e3);
    }

    /** Nearest-rank percentile of the times to READY, in ms (NaN when none). */
    public double percentile(double p) {
        if (readyAfterMs.isEmpty()) {
            return Double.NaN;
        }
        List<Long> sorted = readyAfterMs.stream().sorted().toList();
        int rank = (int) Math.ceil(p / 100.0 * sorted.size());
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
    }
}
