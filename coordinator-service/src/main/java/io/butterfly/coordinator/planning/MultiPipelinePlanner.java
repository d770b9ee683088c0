package io.butterfly.coordinator.planning;

import io.butterfly.common.text.ByteSize;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * How many pipelines a pool of workers runs, and which workers form each (issue #52), as one pure function. Every
 * pipeline holds the whole model and is split into stages by the configured {@link PartitionPlanner}, as a single
 * pipeline is today; the objective is the expected throughput of them all, the sum over pipelines of one over the
 * slowest stage's time, as Parallax plans its pipelines over heterogeneous machines. At least {@code spares} workers
 * are kept out of every pipeline so a lost stage has a replacement.
 *
 * <p>The objective rewards many small pipelines: a pipeline's rate is about its workers' summed throughput over the
 * model's work, whatever their number, but each layer boundary rounds it down and each pipeline needs its own copy of
 * the model's memory. So the pool is packed into as many pipelines as memory allows:
 * <ol>
 *   <li>the workers, largest memory first (unknown memory counts as unlimited), fill one pipeline at a time until it
 *       holds the model (first fit); with a requested count instead, each worker joins the pipeline with the least
 *       memory so far, with the surplus of a first fit dissolved as the fallback;</li>
 *   <li>the spares are kept out of that packing in one of several ways: the slowest workers put aside, the smallest
 *       put aside, or taken out afterwards one by one, each time the worker whose loss costs the least rate; the best
 *       of them is kept (on large pools the first that works: the slowest aside, linear in the pool);</li>
 *   <li>each worker left over beyond the spares joins the pipeline it speeds up most, if any;</li>
 *   <li>on pools of at most {@value #LOCAL_SEARCH_LIMIT} workers, single moves, swaps and pairs forming a new pipeline
 *       are then tried until none raises the rate. Against an exhaustive search on 250 seeded pools of 2-7 workers
 *       it was optimal on 86% of them, at 99.1-99.4% of the optimum on average, 74% at worst
 *       ({@code MultiPipelinePlannerTest}).</li>
 * </ol>
 * A pipeline's workers keep the order they have in the input (the stage planner's pipeline order and tie-break), so
 * the same inputs always give the same plan.
 */
public final class MultiPipelinePlanner {

    /** Pools up to this size are improved by local search after the packing. */
    static final int LOCAL_SEARCH_LIMIT = 24;
    /** Local search stops after this many improving moves (it always terminates; this bounds its time). */
    private static final int MAX_IMPROVEMENTS = 200;

    private final PartitionPlanner stagePlanner;

    public MultiPipelinePlanner(PartitionPlanner stagePlanner) {
        this.stagePlanner = stagePlanner;
    }

    /**
     * Plans the pipelines.
     *
     * @param model     the model (its layers' bytes in its weight format: a pipeline must hold it all)
     * @param workers   the pool, in the order the stage planner should see them
     * @param spares    how many workers to keep out of every pipeline
     * @param pipelines how many pipelines to form; 0 = as many as maximise the expected throughput
     * @throws InfeasiblePlanException  if not even one pipeline (or not the requested number) fits
     * @throws IllegalArgumentException if the inputs are invalid
     */
    public PipelinesPlan plan(ModelFootprint model, List<WorkerCapacity> workers, int spares, int pipelines) {
        PartitionPlanner.requireValid(model, workers);
        if (spares < 0 || pipelines < 0) {
            throw new IllegalArgumentException("spares and pipelines must not be negative");
        }
        if (spares >= workers.size()) {
            throw new InfeasiblePlanException("InsufficientResources: " + workers.size() + " workers leave none for a"
                    + " pipeline after " + spares + " spares", model.totalBytes(1), 0);
        }
        if (pipelines > workers.size() - spares) {
            throw new InfeasiblePlanException("InsufficientResources: " + pipelines + " pipelines need at least as many"
                    + " workers, " + (workers.size() - spares) + " are left after " + spares + " spares",
                    model.totalBytes(1), 0);
        }
        Search search = new Search(model, workers, spares, pipelines);
        search.pack();
        if (workers.size() <= LOCAL_SEARCH_LIMIT) {
            search.improve();
        }
        return search.result();
    }

    /** The state of one planning: each worker's pipeline (or {@link #SPARE}), and the plans of the pipelines seen. */
    private final class Search {
        static final int SPARE = -1;

        final ModelFootprint model;
        final List<WorkerCapacity> workers;
        final int spares;
        final int wanted;
        final int[] label;
        int groups;
        /** Pipeline plans by member set (their indexes in input order); null = infeasible. */
        final Map<List<Integer>, Planned> planned = new HashMap<>();

        Search(ModelFootprint model, List<WorkerCapacity> workers, int spares, int wanted) {
            this.model = model;
            this.workers = workers;
            this.spares = spares;
            this.wanted = wanted;
            this.label = new int[workers.size()];
        }

        /**
         * Packs the pipelines four ways, keeping the best that works: the slowest workers put aside as spares, the
         * smallest put aside, or every worker packed (balanced or one pipeline at a time) and then the cheapest to lose taken out. Large pools stop at the
         * first that works (the slowest aside: linear).
         */
        void pack() {
            List<Integer> byMemory = new ArrayList<>(indexes());
            byMemory.sort(Comparator.<Integer>comparingLong(i -> -memory(i))
                    .thenComparing(i -> -workers.get(i).gflops()).thenComparing(i -> workers.get(i).nodeId()));
            List<Runnable> ways = List.of(
                    () -> {
                        List<Integer> slowest = new ArrayList<>(indexes());
                        slowest.sort(Comparator.<Integer>comparingDouble(i -> workers.get(i).gflops())
                                .thenComparing(i -> -memory(i)).thenComparing(i -> workers.get(i).nodeId()));
                        packWithout(byMemory, slowest.subList(0, spares));
                    },
                    () -> {
                        List<Integer> smallest = new ArrayList<>(byMemory);
                        java.util.Collections.reverse(smallest);
                        packWithout(byMemory, smallest.subList(0, spares));
                    },
                    () -> {
                        packFrom(byMemory, true);
                        freeUp();
                        spreadLeftovers();
                    },
                    () -> {
                        packFrom(byMemory, false);
                        freeUp();
                        spreadLeftovers();
                    });
            int[] best = null;
            int bestGroups = 0;
            double bestRate = -1;
            InfeasiblePlanException failure = null;
            for (Runnable way : ways) {
                try {
                    way.run();
                } catch (InfeasiblePlanException e) {
                    failure = e;
                    continue;
                }
                double rate = total();
                if (rate > bestRate) {
                    bestRate = rate;
                    best = label.clone();
                    bestGroups = groups;
                }
                if (workers.size() > LOCAL_SEARCH_LIMIT) {
                    break;
                }
            }
            if (best == null) {
                throw failure;
            }
            System.arraycopy(best, 0, label, 0, label.length);
            groups = bestGroups;
        }

        /** A worker's memory for ordering: unknown (0) holds anything. */
        private long memory(int i) {
            long m = workers.get(i).memoryBytes();
            return m == 0 ? Long.MAX_VALUE : m;
        }

        private void packWithout(List<Integer> byMemory, List<Integer> aside) {
            java.util.Set<Integer> reserved = java.util.Set.copyOf(aside);
            packFrom(byMemory.stream().filter(i -> !reserved.contains(i)).toList(), true);
            spreadLeftovers();
        }

        /**
         * Forms the pipelines from {@code members} (largest memory first): one at a time, or with a requested count and
         * {@code balance}, memory balanced over them.
         */
        void packFrom(List<Integer> members, boolean balance) {
            java.util.Arrays.fill(label, SPARE);
            groups = 0;
            if (wanted > 0 && balance && balanced(members)) {
                return;
            }
            firstFit(members);
            if (groups == 0) {
                long available = members.stream().mapToLong(i -> workers.get(i).memoryBytes()).sum();
                throw new InfeasiblePlanException("InsufficientResources: no pipeline fits the " + members.size()
                        + " workers (the model needs " + ByteSize.human(model.totalBytes(1))
                        + ", they have " + ByteSize.human(available) + ")", model.totalBytes(1), available);
            }
            if (wanted > 0 && groups < wanted) {
                throw new InfeasiblePlanException("InsufficientResources: the workers' memory holds " + groups
                        + " pipelines, " + wanted + " were asked for", model.totalBytes(1), 0);
            }
            while (wanted > 0 && groups > wanted) {
                dissolve(weakest());
            }
        }

        /**
         * Takes workers out of the pipelines until {@code spares} are free, each time the one whose loss costs the least
         * rate (a pipeline that no longer holds the model without it costs all of its rate and frees all its workers).
         */
        void freeUp() {
            while (free() < spares) {
                int best = -1;
                double bestCost = Double.POSITIVE_INFINITY;
                for (int i = 0; i < label.length; i++) {
                    int g = label[i];
                    if (g == SPARE) {
                        continue;
                    }
                    double before = plan(members(g)).rate;
                    label[i] = SPARE;
                    Planned after = plan(members(g));
                    label[i] = g;
                    boolean dissolves = after == null;
                    if (dissolves && (wanted > 0 || groups == 1)) {
                        continue; // the requested count (or the only pipeline) must stay
                    }
                    double cost = dissolves ? before : before - after.rate;
                    if (cost < bestCost) {
                        bestCost = cost;
                        best = i;
                    }
                }
                if (best < 0) {
                    throw new InfeasiblePlanException("InsufficientResources: the pipelines cannot spare " + spares
                            + " workers", model.totalBytes(1), 0);
                }
                int g = label[best];
                label[best] = SPARE;
                if (plan(members(g)) == null) {
                    dissolve(g);
                }
            }
        }

        int free() {
            int free = 0;
            for (int l : label) {
                free += l == SPARE ? 1 : 0;
            }
            return free;
        }

        /** Requested count: memory balanced over the pipelines (largest first to the emptiest); false if one is short. */
        boolean balanced(List<Integer> members) {
            long[] memory = new long[wanted];
            double[] speed = new double[wanted];
            for (int i : members) {
                int best = 0;
                for (int g = 1; g < wanted; g++) {
                    if (memory[g] < memory[best] || (memory[g] == memory[best] && speed[g] < speed[best])) {
                        best = g;
                    }
                }
                label[i] = best;
                memory[best] = memory[best] + Math.min(memory(i), Long.MAX_VALUE / 64);
                speed[best] += workers.get(i).gflops();
            }
            groups = wanted;
            for (int g = 0; g < wanted; g++) {
                if (plan(members(g)) == null) {
                    java.util.Arrays.fill(label, SPARE);
                    groups = 0;
                    return false;
                }
            }
            return true;
        }

        /** One pipeline at a time, each closed as soon as it holds the model. */
        void firstFit(List<Integer> members) {
            List<Integer> open = new ArrayList<>();
            for (int i : members) {
                open.add(i);
                List<Integer> sorted = open.stream().sorted().toList();
                if (plan(sorted) != null) {
                    for (int m : sorted) {
                        label[m] = groups;
                    }
                    groups++;
                    open.clear();
                }
            }
        }

        /** Workers beyond the spares join the pipeline they speed up most (none: they stay spares). */
        void spreadLeftovers() {
            List<Integer> free = indexes().stream().filter(i -> label[i] == SPARE).toList();
            int extra = free.size() - spares;
            // The fastest free workers are the ones worth placing; the spares kept are the slowest.
            List<Integer> candidates = new ArrayList<>(free);
            candidates.sort(Comparator.<Integer>comparingDouble(i -> -workers.get(i).gflops())
                    .thenComparing(i -> workers.get(i).nodeId()));
            for (int i : candidates) {
                if (extra <= 0) {
                    break;
                }
                int best = SPARE;
                double bestGain = 1e-12;
                List<List<Integer>> byGroup = byGroup();
                for (int g = 0; g < groups; g++) {
                    List<Integer> members = byGroup.get(g);
                    Planned before = plan(members);
                    Planned after = plan(with(members, i));
                    if (after != null && after.rate - before.rate > bestGain * before.rate) {
                        bestGain = (after.rate - before.rate) / before.rate;
                        best = g;
                    }
                }
                if (best != SPARE) {
                    label[i] = best;
                    extra--;
                }
            }
        }

        /** Single moves and swaps (pipelines and spares) while one raises the total rate. */
        void improve() {
            int n = workers.size();
            double current = total();
            for (int round = 0; round < MAX_IMPROVEMENTS; round++) {
                boolean improved = false;
                for (int i = 0; i < n && !improved; i++) {
                    int from = label[i];
                    for (int to = SPARE; to <= groups && !improved; to++) { // groups = a new pipeline of its own
                        if (to == from || (to == groups && wanted > 0)) {
                            continue;
                        }
                        label[i] = to;
                        double t = totalIfValid();
                        if (t > current * (1 + 1e-12)) {
                            current = t;
                            improved = true;
                        } else {
                            label[i] = from;
                        }
                    }
                    for (int j = i + 1; j < n && !improved; j++) {
                        if (label[j] != label[i]) {
                            swap(i, j);
                            double t = totalIfValid();
                            if (t > current * (1 + 1e-12)) {
                                current = t;
                                improved = true;
                            } else {
                                swap(i, j);
                            }
                        }
                        if (!improved && wanted == 0) {
                            // Two workers together as a new pipeline: no single move makes one when none holds the
                            // model alone.
                            int li = label[i];
                            int lj = label[j];
                            label[i] = groups;
                            label[j] = groups;
                            double t = totalIfValid();
                            if (t > current * (1 + 1e-12)) {
                                current = t;
                                improved = true;
                            } else {
                                label[i] = li;
                                label[j] = lj;
                            }
                        }
                    }
                }
                if (!improved) {
                    break;
                }
                compact();
            }
        }

        private void swap(int i, int j) {
            int l = label[i];
            label[i] = label[j];
            label[j] = l;
        }

        /** The total rate if every pipeline holds the model and the spares and the count are as required, else -1. */
        double totalIfValid() {
            if (free() < spares) {
                return -1;
            }
            int nonEmpty = 0;
            double sum = 0;
            for (int g = 0; g <= groups; g++) {
                List<Integer> m = members(g);
                if (m.isEmpty()) {
                    continue;
                }
                Planned p = plan(m);
                if (p == null) {
                    return -1;
                }
                nonEmpty++;
                sum += p.rate;
            }
            return nonEmpty == 0 || (wanted > 0 && nonEmpty != wanted) ? -1 : sum;
        }

        double total() {
            double sum = 0;
            for (List<Integer> members : byGroup()) {
                sum += plan(members).rate;
            }
            return sum;
        }

        /** Renumbers the pipelines 0..groups-1 in order of their first member, dropping empty ones. */
        void compact() {
            Map<Integer, Integer> renumber = new HashMap<>();
            for (int i = 0; i < label.length; i++) {
                if (label[i] != SPARE) {
                    label[i] = renumber.computeIfAbsent(label[i], k -> renumber.size());
                }
            }
            groups = renumber.size();
        }

        int weakest() {
            List<List<Integer>> byGroup = byGroup();
            int worst = 0;
            for (int g = 1; g < groups; g++) {
                if (plan(byGroup.get(g)).rate < plan(byGroup.get(worst)).rate) {
                    worst = g;
                }
            }
            return worst;
        }

        /** A surplus pipeline's workers go back to the pool (the leftovers pass places them). */
        void dissolve(int g) {
            for (int i = 0; i < label.length; i++) {
                if (label[i] == g) {
                    label[i] = SPARE;
                }
            }
            compact();
        }

        List<Integer> members(int g) {
            List<Integer> m = new ArrayList<>();
            for (int i = 0; i < label.length; i++) {
                if (label[i] == g) {
                    m.add(i);
                }
            }
            return m;
        }

        /** Every pipeline's members (as {@link #members}), in one pass over the pool. */
        List<List<Integer>> byGroup() {
            List<List<Integer>> all = new ArrayList<>(groups);
            for (int g = 0; g < groups; g++) {
                all.add(new ArrayList<>());
            }
            for (int i = 0; i < label.length; i++) {
                if (label[i] != SPARE && label[i] < groups) {
                    all.get(label[i]).add(i);
                }
            }
            return all;
        }

        /** {@code members} with worker {@code i} added in input order. */
        static List<Integer> with(List<Integer> members, int i) {
            List<Integer> out = new ArrayList<>(members.size() + 1);
            int at = 0;
            while (at < members.size() && members.get(at) < i) {
                at++;
            }
            out.addAll(members.subList(0, at));
            out.add(i);
            out.addAll(members.subList(at, members.size()));
            return out;
        }

        List<Integer> indexes() {
            List<Integer> all = new ArrayList<>(workers.size());
            for (int i = 0; i < workers.size(); i++) {
                all.add(i);
            }
            return all;
        }

        /** The stage planner's plan of these workers (input order) and its rate, or null when it does not fit. */
        Planned plan(List<Integer> members) {
            if (members.isEmpty()) {
                return null;
            }
            List<Integer> key = List.copyOf(members);
            if (!planned.containsKey(key)) { // an infeasible set is remembered as null
                planned.put(key, planNow(key));
            }
            return planned.get(key);
        }

        private Planned planNow(List<Integer> members) {
            List<WorkerCapacity> group = members.stream().map(workers::get).toList();
            if (!FeasibilityCheck.feasible(model, group)) {
                return null;
            }
            try {
                PartitionPlan p = stagePlanner.plan(model, group);
                return new Planned(p, PipelinesPlan.throughput(model, p, group));
            } catch (InfeasiblePlanException e) {
                return null;
            }
        }

        PipelinesPlan result() {
            compact();
            List<PartitionPlan> plans = new ArrayList<>();
            double sum = 0;
            for (List<Integer> members : byGroup()) {
                Planned p = plan(members);
                plans.add(p.plan);
                sum += p.rate;
            }
            // A stage planner may leave a worker of a pipeline without layers: it is a spare too.
            java.util.Set<String> used = new java.util.HashSet<>();
            plans.forEach(p -> used.addAll(p.pipeline()));
            List<String> free = workers.stream().map(WorkerCapacity::nodeId).filter(id -> !used.contains(id))
                    .sorted().toList();
            return new PipelinesPlan(plans, free, sum);
        }
    }

    private record Planned(PartitionPlan plan, double rate) {
    }
}
