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
 * <p>What is shared out is a decode step's work, the weight bytes it reads: the layers and, on the last stage, the
 * LM head, counted in layers' worth (its weight bytes over an average layer's). So the last worker takes fewer layers
 * where the head is large: Llama 3.1 8B's Q6_K head is 3.5 of its Q4_0 layers, and three equal workers get 12/12/8
 * (whose work is 12, 12 and 11.5 layers) rather than 11/11/10 (11, 11 and 13.5). The weights' format enters through
 * the bytes: the same model's float32 head is 2.4 layers (12/11/9). A footprint that knows no weight size counts
 * layers alone. The embedding is a lookup (a step reads a few rows of it): it counts against memory, not work.
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
        double[] quota = quotas(numLayers, headInLayers(model), workers, cap);

        // Largest remainder: floors first, then one more layer each for the largest fractional parts.
        int[] counts = new int[n];
        int assigned = 0;
        for (int i = 0; i < n; i++) {
            counts[i] = (int) Math.max(0, Math.min(cap[i], Math.floor(quota[i])));
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
     * The LM head's per-step work in layers' worth: its weight bytes over an average layer's (0 when no weight size is
     * known).
     */
    static double headInLayers(ModelFootprint model) {
        StageWork work = StageWork.of(model);
        long layers = work.prefix()[model.numLayers()];
        return layers == 0 ? 0 : (double) work.head() * model.numLayers() / layers;
    }

    /**
     * Ideal real-valued layer shares: the work (the layers and the head, in layers' worth) split in proportion to
     * throughput, the last worker's share of it including the head, each share within its worker's memory cap and a
     * last worker's never below no layers (water-filling). The level of work per unit of throughput at which the
     * shares add up to the layers is found by bisection, only to tell which workers are held at a bound there; the
     * others share exactly what is left, in one division each.
     */
    private static double[] quotas(int numLayers, double head, List<WorkerCapacity> workers, int[] cap) {
        int n = workers.size();
        double lo = 0;
        double hi = 1;
        while (layersAt(hi, head, workers, cap) < numLayers) {
            hi *= 2; // ends: the caps hold every layer (checked before)
        }
        for (int k = 0; k < 200 && lo < hi; k++) {
            double mid = (lo + hi) / 2;
            if (layersAt(mid, head, workers, cap) < numLayers) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        // Capped: at its cap already below the level; empty: a last worker whose share is under the head even above it.
        boolean[] capped = new boolean[n];
        boolean lastEmpty = hi * workers.get(n - 1).gflops() <= head;
        double remaining = numLayers + (lastEmpty ? 0 : head);
        double weight = 0;
        for (int i = 0; i < n; i++) {
            double wanted = lo * workers.get(i).gflops() - (i == n - 1 ? head : 0);
            capped[i] = wanted >= cap[i] && !(i == n - 1 && lastEmpty);
            if (capped[i]) {
                remaining -= cap[i] + (i == n - 1 ? head : 0);
            } else if (!(i == n - 1 && lastEmpty)) {
                weight += workers.get(i).gflops();
            }
        }
        double[] quota = new double[n];
        for (int i = 0; i < n; i++) {
            if (capped[i]) {
                quota[i] = cap[i];
            } else if (!(i == n - 1 && lastEmpty)) {
                quota[i] = remaining * workers.get(i).gflops() / weight - (i == n - 1 ? head : 0);
            }
        }
        return quota;
    }

    /** The layers the workers' shares add up to at {@code level} work per unit of throughput. */
    private static double layersAt(double level, double head, List<WorkerCapacity> workers, int[] cap) {
        int last = workers.size() - 1;
        double sum = 0;
        for (int i = 0; i <= last; i++) {
            double wanted = level * workers.get(i).gflops() - (i == last ? head : 0);
            sum += Math.min(cap[i], Math.max(0, wanted));
        }
        return sum;
    }
}
