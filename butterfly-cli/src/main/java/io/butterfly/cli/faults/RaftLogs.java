package io.butterfly.cli.faults;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;

/**
 * The replicas' committed Raft logs, as (index, term) per replica, compared: a committed index must carry the same term
 * at every replica that still holds it (Raft's log matching: two leaders acting in one term, or a committed entry
 * overwritten, shows here), and the terms of each log never go down along it.
 */
public final class RaftLogs {

    private RaftLogs() {
    }

    /**
     * Each disagreement, described; empty when the logs agree.
     *
     * @param committedTerms per replica, index to term of each committed entry it still holds
     */
    public static List<String> disagreements(Map<String, NavigableMap<Long, Long>> committedTerms) {
        List<String> out = new ArrayList<>();
        committedTerms.forEach((replica, log) -> {
            long previous = Long.MIN_VALUE;
            for (Map.Entry<Long, Long> e : log.entrySet()) {
                if (e.getValue() < previous) {
                    out.add(replica + ": term " + e.getValue() + " at index " + e.getKey() + " after term " + previous);
                }
                previous = e.getValue();
            }
        });
        List<String> replicas = new ArrayList<>(committedTerms.keySet());
        for (int a = 0; a < replicas.size(); a++) {
            for (int b = a + 1; b < replicas.size(); b++) {
                NavigableMap<Long, Long> la = committedTerms.get(replicas.get(a));
                NavigableMap<Long, Long> lb = committedTerms.get(replicas.get(b));
                for (Map.Entry<Long, Long> e : la.entrySet()) {
                    Long other = lb.get(e.getKey());
                    if (other != null && !other.equals(e.getValue())) {
                        out.add("index " + e.getKey() + ": term " + e.getValue() + " at " + replicas.get(a) + ", term "
                                + other + " at " + replicas.get(b));
                    }
                }
            }
        }
        return out;
    }

    /** How many committed entries the logs hold between them (each index once). */
    public static long entries(Map<String, NavigableMap<Long, Long>> committedTerms) {
        return committedTerms.values().stream().flatMap(l -> l.keySet().stream()).distinct().count();
    }
}
