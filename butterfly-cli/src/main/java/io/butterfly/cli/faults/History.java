package io.butterfly.cli.faults;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the clients and the watcher saw while a schedule ran: each request's outcome, the tasks whose start the control
 * log acknowledged (a stream's first event comes only after its task, with its seed, is committed), which replica
 * claimed leadership in which term, and the highest epoch a replica reported (a committed re-plan).
 */
public final class History {

    /** How a request ended. */
    public enum Outcome {
        /** Every token once, in order, the tokens of the fault-free run. */
        COMPLETED,
        /** Failed with a status and a problem document, an error event, or a connection the client could report. */
        FAILED_CLEARLY,
        /** Ended without its tokens or a reason (a 200 without its done event, an empty error). */
        UNCLEAR,
        /** Gave a token that the fault-free run did not give at that index. */
        WRONG_TOKENS
    }

    private final Map<Outcome, AtomicLong> outcomes = new ConcurrentHashMap<>();
    private final List<String> wrong = Collections.synchronizedList(new ArrayList<>());
    private final List<String> failures = Collections.synchronizedList(new ArrayList<>());
    private final Set<String> acknowledged = ConcurrentHashMap.newKeySet();
    private final Map<Long, Set<String>> leadersByTerm = new ConcurrentHashMap<>();
    private final AtomicLong maxEpoch = new AtomicLong();

    public void request(Outcome outcome, String detail) {
        outcomes.computeIfAbsent(outcome, o -> new AtomicLong()).incrementAndGet();
        if (outcome == Outcome.WRONG_TOKENS || outcome == Outcome.UNCLEAR) {
            wrong.add(outcome + ": " + detail);
        } else if (outcome == Outcome.FAILED_CLEARLY && failures.size() < 20) {
            failures.add(detail);
        }
    }

    public void acknowledgedTask(String taskId) {
        acknowledged.add(taskId);
    }

    /** A replica said it leads in {@code term}. */
    public void leader(long term, String selfId) {
        leadersByTerm.computeIfAbsent(term, t -> ConcurrentHashMap.newKeySet()).add(selfId);
    }

    public void epoch(long epoch) {
        maxEpoch.accumulateAndGet(epoch, Math::max);
    }

    public long count(Outcome outcome) {
        AtomicLong n = outcomes.get(outcome);
        return n == null ? 0 : n.get();
    }

    public long requests() {
        return outcomes.values().stream().mapToLong(AtomicLong::get).sum();
    }

    public Set<String> acknowledgedTasks() {
        return Set.copyOf(acknowledged);
    }

    /** Terms in which more than one replica said it was the leader, with who said so. */
    public Map<Long, Set<String>> termsWithTwoLeaders() {
        Map<Long, Set<String>> out = new java.util.TreeMap<>();
        leadersByTerm.forEach((term, ids) -> {
            if (ids.size() > 1) {
                out.put(term, Set.copyOf(ids));
            }
        });
        return out;
    }

    public int termsSeen() {
        return leadersByTerm.size();
    }

    public long maxEpoch() {
        return maxEpoch.get();
    }

    /** The wrong and unclear outcomes, described. */
    public List<String> wrongOutcomes() {
        synchronized (wrong) {
            return List.copyOf(wrong);
        }
    }

    /** The first clear failures, described (what a failed request was told). */
    public List<String> someFailures() {
        synchronized (failures) {
            return List.copyOf(failures);
        }
    }
}
