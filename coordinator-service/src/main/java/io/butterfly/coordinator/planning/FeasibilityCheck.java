package io.butterfly.coordinator.planning;

import io.butterfly.common.text.ByteSize;
import java.util.List;
import java.util.Locale;

/**
 * The check before any assignment (docs/initialization-and-bootstrap.md §5.1): the model's total memory
 * need against the workers' total memory, and the largest single stage piece against the largest
 * worker. It is necessary, not sufficient: the planners still check every stage against its worker
 * and fail with the same error when the memory is too fragmented.
 */
public final class FeasibilityCheck {

    private FeasibilityCheck() {
    }

    public static FeasibilityReport check(ModelFootprint model, List<WorkerCapacity> workers) {
        if (workers.isEmpty()) {
            throw new IllegalArgumentException("at least one worker is needed");
        }
        // One stage's headroom: a lower bound on every split, so "infeasible" here is never wrong.
        long required = model.totalBytes(1);
        boolean unknown = workers.stream().anyMatch(w -> w.memoryBytes() == 0);
        if (unknown || model.weightless()) {
            return new FeasibilityReport(true, required, 0,
                    "memory not checked: " + (unknown ? "a worker did not report its memory" : "model size unknown"));
        }
        long available = workers.stream().mapToLong(WorkerCapacity::memoryBytes).sum();
        if (required > available) {
            return new FeasibilityReport(false, required, available, String.format(Locale.ROOT,
                    "InsufficientResources: the model needs %s (weights, KV cache and activation headroom),"
                            + " the %d workers have %s", ByteSize.human(required), workers.size(), ByteSize.human(available)));
        }
        long largest = workers.stream().mapToLong(WorkerCapacity::memoryBytes).max().orElse(0);
        long smallestPiece = smallestFirstOrLastStage(model);
        if (smallestPiece > largest) {
            return new FeasibilityReport(false, smallestPiece, largest, String.format(Locale.ROOT,
                    "InsufficientResources: the first or last stage alone needs at least %s, the largest worker has %s",
                    ByteSize.human(smallestPiece), ByteSize.human(largest)));
        }
        return new FeasibilityReport(true, required, available, String.format(Locale.ROOT,
                "the model needs %s, the %d workers have %s", ByteSize.human(required), workers.size(), ByteSize.human(available)));
    }

    /** Whether {@link #check} finds the workers feasible, without writing its reasons (the planners ask often). */
    public static boolean feasible(ModelFootprint model, List<WorkerCapacity> workers) {
        if (workers.isEmpty()) {
            throw new IllegalArgumentException("at least one worker is needed");
        }
        long available = 0;
        long largest = 0;
        for (WorkerCapacity w : workers) {
            if (w.memoryBytes() == 0) {
                return true;
            }
            available += w.memoryBytes();
            largest = Math.max(largest, w.memoryBytes());
        }
        return model.weightless()
                || (model.totalBytes(1) <= available && smallestFirstOrLastStage(model) <= largest);
    }

    /** The first stage holds layer 0 and the embedding, the last one layer L-1 and the head: one of them is at least this. */
    private static long smallestFirstOrLastStage(ModelFootprint m) {
        int last = m.numLayers();
        if (last == 1) {
            return m.stageBytes(0, 1);
        }
        return Math.max(m.stageBytes(0, 1), m.stageBytes(last - 1, last));
    }
}
