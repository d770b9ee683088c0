package io.butterfly.coordinator.planning;

import io.butterfly.common.text.ByteSize;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.IntStream;

/**
 * Contiguous layer ranges sized in proportion to measured throughput (docs/initialization-and-bootstrap.md
 * §4.2, "capacity-weighted"), optionally capped by how many layers fit into a worker's memory.
 *
 * <p>The spec's sketch rounds every share up, which can leave the last workers with nothing; here the
 * ideal (real-valued) quotas are rounded with the largest-remainder method, so the counts always sum
 * to the layer count. When there are at least as many layers as workers every worker gets at least
 * one layer (a worker that joined but idles would only look broken). The pipeline follows the input
 * order and all ties are broken by it, so the same inputs always give the same plan.
 */
public final class CapacityWeightedPlanner implements PartitionPlanner {

    private final long bytesPerLayer;

    /** No default layer size: {@link #plan(int, List)} splits by throughput alone. */
    public CapacityWeightedPlanner() {
        this(0);
    }

    /**
     * @param bytesPerLayer layer size assumed by {@link #plan(int, List)} (0 = memory is not considered);
     *                      {@link #plan(ModelFootprint, List)} uses the footprint it is given instead
     */
    public CapacityWeightedPlanner(long bytesPerLayer) {
        if (bytesPerLayer < 0) {
            throw new IllegalArgumentException("bytesPerLayer must not be negative, got " + bytesPerLayer);
        }
        this.bytesPerLayer = bytesPerLayer;
    }

    @Override
    public PartitionPlan plan(int numLayers, List<WorkerCapacity> workers) {
        if (numLayers <= 0) {
            throw new IllegalArgumentException("numLayers must be positive, got " + numLayers);
        }
        return plan(ModelFootprint.uniform(numLayers, bytesPerLayer), workers);
    }

    @Override
    public PartitionPlan plan(ModelFootprint model, List<WorkerCapacity> workers) {
        PartitionPlanner.requireValid(model, workers);
        int numLayers = model.numLayers();
        int[] counts = layerCounts(model, workers);
        List<StageAssignment> stages = new ArrayList<>();
        int last = IntStream.range(0, counts.length).filter(i -> counts[i] > 0).max().orElseThrow();
        int start = 0;
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] == 0) {
                continue;
            }
            WorkerCapacity w = workers.get(i);
            int end = start + counts[i];
            // The caps assume the largest layers; this catches the rare case where the embedding or head
            // landed on a worker that was not reserved for it (its neighbour got no layers).
            if (!PartitionPlanner.fits(model, w.memoryBytes(), start, end)) {
                throw new InfeasiblePlanException("InsufficientResources: layers [" + start + ", " + end + ") need "
                        + ByteSize.human(model.stageBytes(start, end)) + ", worker " + w.nodeId() + " has "
                        + ByteSize.human(w.memoryBytes()) + " (the optimal planner may still find a split)",
                        model.stageBytes(start, end), w.memoryBytes());
            }
            stages.add(new StageAssignment(w.nodeId(), start, end, start == 0, i == last));
            start = end;
        }
        if (start != numLayers) {
            throw new IllegalStateException("planned " + start + " of " + numLayers + " layers"); // never: counts sum up
        }
        return new PartitionPlan(stages);
    }

    /** Layers per worker for a model of {@code numLayers} layers of the planner's default size. */
    int[] layerCounts(int numLayers, List<WorkerCapacity> workers) {
        return layerCounts(ModelFootprint.uniform(numLayers, bytesPerLayer), workers);
    }

    /**
     * How many layers a worker can hold at most: the largest k whose k biggest layers, the stage headroom
     * and the embedding (first worker) or head (last worker) fit into its memory.
     */
    private static int[] caps(ModelFootprint model, List<WorkerCapacity> workers) {
        int numLayers = model.numLayers();
        long[] sorted = model.layerBytes().clone();
        Arrays.sort(sorted);
        int n = workers.size();
        int[] cap = new int[n];
        for (int i = 0; i < n; i++) {
            long mem = workers.get(i).memoryBytes();
            if (mem == 0 || model.weightless()) {
                cap[i] = numLayers;
                continue;
            }
            long used = model.stageOverheadBytes() + (i == 0 ? model.embeddingBytes() : 0)
                    + (i == n - 1 ? model.headBytes() : 0);
            int k = 0;
            while (k < numLayers && used + sorted[numLayers - 1 - k] <= mem) {
                used += sorted[numLayers - 1 - k];
                k++;
            }
            cap[i] = k;
        }
        return cap;
    }

    /** Layers per worker (input order); sums to the model's layer count. */
    int[] layerCounts(ModelFootprint model, List<WorkerCapacity> workers) {
        int numLayers = model.numLayers();
        int n = workers.size();
        int[] cap = caps(model, workers);
        long totalCap = 0;
        for (int c : cap) {
            totalCap += c;
        }
        if (totalCap < numLayers) {
            long available = workers.stream().mapToLong(WorkerCapacity::memoryBytes).sum();
            throw new InfeasiblePlanException("InsufficientResources: the workers' memory ("
                    + ByteSize.human(available) + ") holds only " + totalCap + " of " + numLayers
                    + " layers; the model needs " + ByteSize.human(model.totalBytes(Math.min(n, numLayers))),
                    model.totalBytes(Math.min(n, numLayers)), available);
        }
        double[] quota = quotas(numLayers, workers, cap);

        // Largest remainder: floors first, then one more layer each for the largest fractional parts.
        int[] counts = new int[n];
        int assigned = 0;
        for (int i = 0; i < n; i++) {
            counts[i] = (int) Math.min(cap[i], Math.floor(quota[i]));
            assigned += counts[i];
        }
        Integer[] byRemainder = IntStream.range(0, n).boxed().toArray(Integer[]::new);
        Arrays.sort(byRemainder, Comparator.<Integer>comparingDouble(i -> -(quota[i] - Math.floor(quota[i])))
                .thenComparingInt(i -> i));
        while (assigned < numLayers) {
            boolean progressed = false;
            for (int i : byRemainder) {
                if (assigned == numLayers) {
                    break;
                }
                if (counts[i] < cap[i]) {
                    counts[i]++;
                    assigned++;
                    progressed = true;
                }
            }
            if (!progressed) {
                throw new IllegalStateException("cannot place " + (numLayers - assigned) + " layers"); // unreachable: totalCap >= numLayers
            }
        }

        // At least one layer each: move layers from the most over-served workers (count - quota) to the idle ones.
        if (numLayers >= n) {
            for (int r = 0; r < n; r++) {
                if (counts[r] > 0 || cap[r] == 0) {
                    continue;
                }
                int donor = -1;
                for (int j = 0; j < n; j++) {
                    if (counts[j] > 1 && (donor < 0 || counts[j] - quota[j] > counts[donor] - quota[donor])) {
                        donor = j;
                    }
                }
                if (donor < 0) {
                    break; // only possible when memory-less workers hold the surplus; nothing to move
                }
                counts[donor]--;
                counts[r]++;
            }
        }
        return counts;
    }

    /**
     * Ideal real-valued shares, proportional to throughput. Workers whose share exceeds their memory cap
     * are pinned at the cap and the rest is re-split among the others (water-filling).
     */
    private static double[] quotas(int numLayers, List<WorkerCapacity> workers, int[] cap) {
        int n = workers.size();
        double[] quota = new double[n];
        boolean[] pinned = new boolean[n];
        while (true) {
            double remaining = numLayers;
            double weight = 0;
            for (int i = 0; i < n; i++) {
                if (pinned[i]) {
                    remaining -= cap[i];
                } else {
                    weight += workers.get(i).gflops();
                }
            }
            boolean changed = false;
            for (int i = 0; i < n; i++) {
                if (pinned[i]) {
                    quota[i] = cap[i];
                    continue;
                }
                quota[i] = weight > 0 ? remaining * workers.get(i).gflops() / weight : 0;
                if (quota[i] > cap[i]) {
                    pinned[i] = true;
                    changed = true;
                }
            }
            if (!changed) {
                return quota;
            }
        }
    }
}
