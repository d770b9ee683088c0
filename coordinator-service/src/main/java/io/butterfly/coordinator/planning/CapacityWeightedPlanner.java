package io.butterfly.coordinator.planning;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;

/**
 * Contiguous layer ranges sized in proportion to measured throughput (initialization-and-bootstrap.md
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

    /** No memory cap: the split follows throughput alone (the layer size is not known up front). */
    public CapacityWeightedPlanner() {
        this(0);
    }

    /**
     * @param bytesPerLayer approximate weight bytes of one transformer layer; when positive, a worker
     *                      with known memory never gets more than {@code memoryBytes / bytesPerLayer}
     *                      layers and its surplus share goes to the others in proportion to throughput
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
        if (workers == null || workers.isEmpty()) {
            throw new IllegalArgumentException("at least one worker is needed");
        }
        Set<String> ids = new HashSet<>();
        for (WorkerCapacity w : workers) {
            if (!ids.add(w.nodeId())) {
                throw new IllegalArgumentException("worker " + w.nodeId() + " is listed twice");
            }
        }
        int[] counts = layerCounts(numLayers, workers);
        List<StageAssignment> stages = new ArrayList<>();
        int last = IntStream.range(0, counts.length).filter(i -> counts[i] > 0).max().orElseThrow();
        int start = 0;
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] == 0) {
                continue;
            }
            stages.add(new StageAssignment(workers.get(i).nodeId(), start, start + counts[i], start == 0, i == last));
            start += counts[i];
        }
        return new PartitionPlan(stages);
    }

    /** Layers per worker (input order); sums to {@code numLayers}. */
    int[] layerCounts(int numLayers, List<WorkerCapacity> workers) {
        int n = workers.size();
        int[] cap = new int[n];
        long totalCap = 0;
        for (int i = 0; i < n; i++) {
            long mem = workers.get(i).memoryBytes();
            cap[i] = bytesPerLayer > 0 && mem > 0 ? (int) Math.min(numLayers, mem / bytesPerLayer) : numLayers;
            totalCap += cap[i];
        }
        if (totalCap < numLayers) {
            throw new IllegalArgumentException("the workers' memory holds only " + totalCap + " of " + numLayers + " layers");
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
