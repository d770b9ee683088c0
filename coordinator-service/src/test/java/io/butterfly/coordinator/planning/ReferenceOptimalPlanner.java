package io.butterfly.coordinator.planning;

import io.butterfly.common.text.ByteSize;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The optimal split (docs/initialization-and-bootstrap.md §5.2) by dynamic programming: contiguous half-open
 * ranges, in the workers' order, minimising the slowest stage's time (its work over the worker's measured
 * throughput: in a pipeline the slowest stage bounds the token rate) while every stage fits its
 * worker's memory. Unlike the spec's sketch (which sums the stage times, i.e. optimises a single
 * request's latency and so would put everything on the fastest node), the objective is the
 * bottleneck, as in Parallax's layer allocation.
 *
 * <p>A stage's work is the weight bytes one decode step reads: its layers' weights and, on the last stage,
 * the LM head, which a layer count leaves out although it is often the largest matrix (bench-100m's
 * 32000 x 768 head is three and a half of its layers: 4/4/4 on equal workers gives the last stage 87% more
 * work than the others, 5/5/2 comes within 7% of an even split). Not counted: the KV cache (a step reads the
 * context so far, not the capacity) and the embedding (a lookup reads a few rows). A footprint that knows no
 * layer's weight size counts layers.
 *
 * <p>{@code best[i][l]} is the smallest bottleneck that places layers {@code [0, l)} on workers
 * {@code 0..i-1}, where a worker may be left out (no range) when that is at least as good: fewer hops at
 * equal throughput. O(workers · layers²) time, exact (no floating-point sums: a stage time is one
 * division, a bottleneck one max), so it equals an exhaustive search.
 */
final class ReferenceOptimalPlanner implements PartitionPlanner {

    /** Marks "worker i-1 got no layers" in the choice table. */
    private static final int SKIPPED = -1;

    @Override
    public PartitionPlan plan(ModelFootprint model, List<WorkerCapacity> workers) {
        PartitionPlanner.requireValid(model, workers);
        FeasibilityReport feasibility = FeasibilityCheck.check(model, workers);
        if (!feasibility.feasible()) {
            throw new InfeasiblePlanException(feasibility.reason(), feasibility.requiredBytes(),
                    feasibility.availableBytes());
        }
        int n = workers.size();
        int layers = model.numLayers();
        StageWork work = StageWork.of(model);
        double[][] best = new double[n + 1][layers + 1];
        int[][] from = new int[n + 1][layers + 1];
        for (double[] row : best) {
            Arrays.fill(row, Double.POSITIVE_INFINITY);
        }
        best[0][0] = 0;
        for (int i = 1; i <= n; i++) {
            WorkerCapacity w = workers.get(i - 1);
            for (int end = 0; end <= layers; end++) {
                best[i][end] = best[i - 1][end];
                from[i][end] = SKIPPED;
                for (int start = end - 1; start >= 0; start--) {
                    if (best[i - 1][start] == Double.POSITIVE_INFINITY) {
                        continue;
                    }
                    if (!PartitionPlanner.fits(model, w.memoryBytes(), start, end)) {
                        // The stage only grows as start moves down; memory per layer is never negative.
                        break;
                    }
                    double time = Math.max(best[i - 1][start], work.stageTime(w, start, end));
                    if (time < best[i][end]) {
                        best[i][end] = time;
                        from[i][end] = start;
                    }
                }
            }
        }
        if (best[n][layers] == Double.POSITIVE_INFINITY) {
            long available = workers.stream().mapToLong(WorkerCapacity::memoryBytes).sum();
            throw new InfeasiblePlanException("InsufficientResources: no contiguous split of " + layers
                    + " layers fits the workers' memory (the model needs "
                    + ByteSize.human(model.totalBytes(1)) + ", the workers have "
                    + ByteSize.human(available) + " in total but too fragmented)",
                    model.totalBytes(1), available);
        }
        return reconstruct(from, workers, layers);
    }

    /** The slowest stage's time of a plan (the objective). */
    public static double bottleneck(ModelFootprint model, PartitionPlan plan, List<WorkerCapacity> workers) {
        StageWork work = StageWork.of(model);
        double max = 0;
        for (StageAssignment s : plan.stages()) {
            WorkerCapacity w = workers.stream().filter(c -> c.nodeId().equals(s.nodeId())).findFirst().orElseThrow();
            max = Math.max(max, work.stageTime(w, s.layerStart(), s.layerEnd()));
        }
        return max;
    }

    private static PartitionPlan reconstruct(int[][] from, List<WorkerCapacity> workers, int layers) {
        List<int[]> ranges = new ArrayList<>(); // {worker, start, end}, last stage first
        int end = layers;
        for (int i = workers.size(); i >= 1; i--) {
            int start = from[i][end];
            if (start != SKIPPED) {
                ranges.add(new int[] {i - 1, start, end});
                end = start;
            }
        }
        List<StageAssignment> stages = new ArrayList<>();
        for (int k = ranges.size() - 1; k >= 0; k--) {
            int[] r = ranges.get(k);
            stages.add(new StageAssignment(workers.get(r[0]).nodeId(), r[1], r[2], r[1] == 0, r[2] == layers));
        }
        return new PartitionPlan(stages);
    }
}
