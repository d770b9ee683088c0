package io.butterfly.coordinator.inference.engine;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * The KV cache each stage can give this replica's sequences, and what they hold: a sequence starts only when every
 * stage has room for all the positions it may reach (as the stages reserve them from its first chunk), so a stage
 * never refuses a step; a sequence that could not fit one stage even alone is refused when it is submitted.
 */
public final class KvBudgets {

    /**
     * One stage: its budget for this replica's sequences and what a sequence that may reach {@code positions} takes
     * there. A budget of 0 is unknown and never limits.
     */
    public record Stage(String nodeId, long budgetBytes, ToLongFunction<Integer> bytesFor) {
    }

    private final List<Stage> stages;
    private final Map<String, Long> used = new HashMap<>();

    public KvBudgets(List<Stage> stages) {
        this.stages = List.copyOf(stages);
    }

    /** No stage known: nothing is limited. */
    public static KvBudgets unlimited() {
        return new KvBudgets(List.of());
    }

    /** The first stage {@code positions} could never fit on, even alone; null when it fits everywhere. */
    public Stage neverFits(int positions) {
        for (Stage s : stages) {
            if (s.budgetBytes() > 0 && s.bytesFor().applyAsLong(positions) > s.budgetBytes()) {
                return s;
            }
        }
        return null;
    }

    boolean fits(int positions) {
        for (Stage s : stages) {
            if (s.budgetBytes() > 0 && used(s) + s.bytesFor().applyAsLong(positions) > s.budgetBytes()) {
                return false;
            }
        }
        return true;
    }

    void reserve(int positions) {
        stages.forEach(s -> used.merge(s.nodeId(), s.bytesFor().applyAsLong(positions), Long::sum));
    }

    void free(int positions) {
        stages.forEach(s -> used.merge(s.nodeId(), -s.bytesFor().applyAsLong(positions), Long::sum));
    }

    /** Bytes reserved on {@code nodeId} now. */
    public long used(String nodeId) {
        return used.getOrDefault(nodeId, 0L);
    }

    private long used(Stage s) {
        return used(s.nodeId());
    }

    /** Each stage's use of its budget, 0..1 (0 for an unknown budget). */
    public Map<String, Double> usage() {
        Map<String, Double> out = new HashMap<>();
        for (Stage s : stages) {
            out.put(s.nodeId(), s.budgetBytes() > 0 ? (double) used(s) / s.budgetBytes() : 0.0);
        }
        return out;
    }
}
