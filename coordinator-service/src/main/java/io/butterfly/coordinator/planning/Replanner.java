package io.butterfly.coordinator.planning;

import io.butterfly.common.text.ByteSize;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The plan after stages are lost (docs/state-machines.md §6.1): a node FAILED, or drained. It changes as few stages as it
 * can, because a stage that keeps its node and range keeps its loaded weights and every sequence's KV cache, and only
 * the stages that change must load and have their sequences replayed into them:
 *
 * <ol>
 *   <li>each lost stage goes, range unchanged, to a spare that can hold it (the fastest; ties by id): only the spare
 *       loads;</li>
 *   <li>a lost stage no spare can hold goes to a neighbour (the one that leaves the slower stage faster), or is split
 *       between both neighbours when neither can hold it alone;</li>
 *   <li>failing that, the configured planner plans every stage anew over the survivors and the spares.</li>
 * </ol>
 *
 * Pure: the same inputs give the same plan.
 */
public final class Replanner {

    /**
     * A new plan and what it changed, in words for the state and the log.
     *
     * @param changed the nodes whose stage is new or different (they load); the others keep theirs
     */
    public record Replan(PartitionPlan plan, List<String> changed, String summary) {
    }

    /** A stage while it is re-planned: its node (null while it has none), its range and its expert groups. */
    private record Slot(String nodeId, int start, int end, List<ExpertGroup> groups) {

        Slot(String nodeId, int start, int end) {
            this(nodeId, start, end, List.of());
        }
    }

    private Replanner() {
    }

    /**
     * @param current  the current plan's stages, in pipeline order
     * @param lost     nodes whose stages must go
     * @param workers  every worker that may hold a stage: the current plan's survivors and the spares (the workers not in
     *                 it), each once
     * @param fallback plans every stage anew when keeping the survivors' stages cannot work
     * @throws InfeasiblePlanException the workers cannot hold the model; its message names need and capacity
     */
    public static Replan replan(ModelFootprint model, List<StageAssignment> current, Set<String> lost,
                                List<WorkerCapacity> workers, PartitionPlanner fallback) {
        return replan(model, ExpertFootprint.none(), current, lost, workers, fallback);
    }

    /**
     * As {@link #replan(ModelFootprint, List, Set, List, PartitionPlanner)}, expert groups included: a lost group goes,
     * experts unchanged, to a spare that can hold them, else to the group before it (whose worker then holds both
     * ranges); a stage's worker lost with its stage takes its group 0 to the spare that takes the stage. A stage merged
     * into a neighbour, or planned anew, holds all of its experts.
     */
    public static Replan replan(ModelFootprint model, ExpertFootprint experts, List<StageAssignment> current,
                                Set<String> lost, List<WorkerCapacity> workers, PartitionPlanner fallback) {
        Map<String, WorkerCapacity> byId = new LinkedHashMap<>();
        workers.forEach(w -> byId.put(w.nodeId(), w));
        List<Slot> slots = new ArrayList<>();
        for (StageAssignment s : current) {
            boolean gone = lost.contains(s.nodeId()) || !byId.containsKey(s.nodeId());
            slots.add(new Slot(gone ? null : s.nodeId(), s.layerStart(), s.layerEnd(), s.expertGroups()));
        }
        List<String> notes = new ArrayList<>();
        List<WorkerCapacity> spares = spares(current, workers);
        for (int i = 0; i < slots.size(); i++) {
            Slot slot = slots.get(i);
            if (!slot.groups().isEmpty()) {
                slots.set(i, new Slot(slot.nodeId(), slot.start(), slot.end(),
                        regroup(model, experts, current.get(i), lost, byId, spares, notes)));
            }
        }
        for (int i = 0; i < slots.size(); i++) {
            Slot slot = slots.get(i);
            if (slot.nodeId() == null) {
                WorkerCapacity spare = fittingSpare(model, spares, slot);
                if (spare != null) {
                    spares.remove(spare);
                    List<ExpertGroup> groups = new ArrayList<>(slot.groups());
                    if (!groups.isEmpty()) {
                        groups.set(0, groups.get(0).on(spare.nodeId()));
                    }
                    slots.set(i, new Slot(spare.nodeId(), slot.start(), slot.end(), groups));
                    notes.add("spare " + spare.nodeId() + " takes " + range(slot.start(), slot.end()) + " of "
                            + current.get(i).nodeId());
                }
            }
        }
        StageWork work = StageWork.of(model);
        while (true) {
            int first = firstEmpty(slots);
            if (first < 0) {
                break;
            }
            if (!mergeIntoNeighbours(model, work, byId, slots, first, current, notes)) {
                return anew(model, current, lost, workers, fallback);
            }
        }
        List<StageAssignment> stages = new ArrayList<>();
        int layers = model.numLayers();
        for (Slot s : slots) {
            stages.add(new StageAssignment(s.nodeId(), s.start(), s.end(), s.start() == 0, s.end() == layers,
                    s.groups().size() > 1 ? s.groups() : List.of()));
        }
        PartitionPlan plan = new PartitionPlan(stages);
        return new Replan(plan, changed(current, plan), String.join("; ", notes));
    }

    /**
     * The stage's expert groups with every lost holder (groups 1..n-1) replaced: by a spare that can hold its experts
     * (taken from {@code spares}), else by the group before it widened over its experts. Group 0 stays on the stage's
     * worker, lost or not (the stage goes to a spare or a neighbour with it).
     */
    private static List<ExpertGroup> regroup(ModelFootprint model, ExpertFootprint experts, StageAssignment stage,
                                             Set<String> lost, Map<String, WorkerCapacity> byId,
                                             List<WorkerCapacity> spares, List<String> notes) {
        List<ExpertGroup> out = new ArrayList<>();
        for (int i = 0; i < stage.expertGroups().size(); i++) {
            ExpertGroup g = stage.expertGroups().get(i);
            if (i == 0 || (!lost.contains(g.nodeId()) && byId.containsKey(g.nodeId()))) {
                out.add(g);
                continue;
            }
            WorkerCapacity spare = spares.stream().filter(w -> w.memoryBytes() == 0
                    || ExpertSpread.need(model, experts, stage, g, false) <= w.memoryBytes()).findFirst().orElse(null);
            if (spare != null) {
                spares.remove(spare);
                out.add(g.on(spare.nodeId()));
                notes.add("spare " + spare.nodeId() + " takes experts " + range(g.firstExpert(), g.endExpert())
                        + " of layers " + range(stage.layerStart(), stage.layerEnd()) + " from " + g.nodeId());
            } else {
                ExpertGroup before = out.remove(out.size() - 1);
                out.add(new ExpertGroup(before.nodeId(), before.firstExpert(), g.endExpert()));
                notes.add(before.nodeId() + " takes experts " + range(g.firstExpert(), g.endExpert()) + " of layers "
                        + range(stage.layerStart(), stage.layerEnd()) + " (" + g.nodeId() + " lost, no spare)");
            }
        }
        return out;
    }

    /** The workers outside the current plan, fastest first (ties by id). */
    private static List<WorkerCapacity> spares(List<StageAssignment> current, List<WorkerCapacity> workers) {
        Set<String> planned = new java.util.HashSet<>();
        current.forEach(s -> planned.addAll(s.holders()));
        List<WorkerCapacity> spares = new ArrayList<>(workers.stream().filter(w -> !planned.contains(w.nodeId())).toList());
        spares.sort(Comparator.comparingDouble(WorkerCapacity::gflops).reversed().thenComparing(WorkerCapacity::nodeId));
        return spares;
    }

    private static WorkerCapacity fittingSpare(ModelFootprint model, List<WorkerCapacity> spares, Slot slot) {
        for (WorkerCapacity w : spares) {
            if (PartitionPlanner.fits(model, w.memoryBytes(), slot.start(), slot.end())) {
                return w;
            }
        }
        return null;
    }

    private static int firstEmpty(List<Slot> slots) {
        for (int i = 0; i < slots.size(); i++) {
            if (slots.get(i).nodeId() == null) {
                return i;
            }
        }
        return -1;
    }

    /** Slots {@code from..to} (inclusive) replaced by {@code slots}. */
    private record Option(int from, int to, List<Slot> slots) {
    }

    /**
     * Gives the run of node-less stages starting at {@code first} to its neighbours: all to the one that leaves the
     * slowest stage fastest, else split at the point that does; false when no neighbour can take it.
     */
    private static boolean mergeIntoNeighbours(ModelFootprint model, StageWork work, Map<String, WorkerCapacity> byId,
                                               List<Slot> slots, int first, List<StageAssignment> current,
                                               List<String> notes) {
        int last = first;
        while (last + 1 < slots.size() && slots.get(last + 1).nodeId() == null) {
            last++;
        }
        int a = slots.get(first).start();
        int b = slots.get(last).end();
        Slot left = first > 0 ? slots.get(first - 1) : null;
        Slot right = last + 1 < slots.size() ? slots.get(last + 1) : null;
        List<Option> options = new ArrayList<>();
        if (left != null) {
            options.add(new Option(first - 1, last, List.of(new Slot(left.nodeId(), left.start(), b))));
        }
        if (right != null) {
            options.add(new Option(first, last + 1, List.of(new Slot(right.nodeId(), a, right.end()))));
        }
        Option best = cheapest(model, work, byId, slots, options);
        if (best == null && left != null && right != null) {
            List<Option> splits = new ArrayList<>();
            for (int k = a + 1; k < b; k++) {
                splits.add(new Option(first - 1, last + 1, List.of(new Slot(left.nodeId(), left.start(), k),
                        new Slot(right.nodeId(), k, right.end()))));
            }
            best = cheapest(model, work, byId, slots, splits);
        }
        if (best == null) {
            return false;
        }
        List<String> lostIds = current.subList(first, last + 1).stream().map(StageAssignment::nodeId).toList();
        for (Slot s : best.slots()) {
            notes.add(s.nodeId() + " takes " + range(s.start(), s.end()) + " (" + String.join(", ", lostIds) + " lost)");
        }
        for (int i = best.to(); i >= best.from(); i--) {
            slots.remove(i);
        }
        slots.addAll(best.from(), best.slots());
        return true;
    }

    /** The option that fits and whose plan's slowest stage is fastest, or null. */
    private static Option cheapest(ModelFootprint model, StageWork work, Map<String, WorkerCapacity> byId,
                                   List<Slot> slots, List<Option> options) {
        Option best = null;
        double bestTime = Double.POSITIVE_INFINITY;
        for (Option option : options) {
            boolean fits = option.slots().stream().allMatch(s ->
                    PartitionPlanner.fits(model, byId.get(s.nodeId()).memoryBytes(), s.start(), s.end()));
            if (!fits) {
                continue;
            }
            double time = 0;
            for (Slot s : option.slots()) {
                time = Math.max(time, work.stageTime(byId.get(s.nodeId()), s.start(), s.end()));
            }
            for (int i = 0; i < slots.size(); i++) {
                Slot s = slots.get(i);
                if ((i < option.from() || i > option.to()) && s.nodeId() != null) {
                    time = Math.max(time, work.stageTime(byId.get(s.nodeId()), s.start(), s.end()));
                }
            }
            if (time < bestTime) {
                bestTime = time;
                best = option;
            }
        }
        return best;
    }

    /** Every stage planned anew by the configured planner: survivors in their pipeline order, then the spares. */
    private static Replan anew(ModelFootprint model, List<StageAssignment> current, Set<String> lost,
                               List<WorkerCapacity> workers, PartitionPlanner fallback) {
        List<WorkerCapacity> ordered = new ArrayList<>();
        List<String> survivors = new ArrayList<>();
        current.forEach(s -> survivors.add(s.nodeId()));
        current.forEach(s -> survivors.addAll(s.expertHolders()));
        for (String id : survivors) {
            workers.stream().filter(w -> w.nodeId().equals(id) && !lost.contains(id)).findFirst().ifPresent(ordered::add);
        }
        spares(current, workers).stream().sorted(Comparator.comparing(WorkerCapacity::nodeId)).forEach(ordered::add);
        if (ordered.isEmpty()) {
            long need = model.totalBytes(1);
            throw new InfeasiblePlanException(String.format(Locale.ROOT,
                    "InsufficientResources: the model needs %s and no worker is left to hold it", ByteSize.human(need)),
                    need, 0);
        }
        FeasibilityReport feasibility = FeasibilityCheck.check(model, ordered);
        if (!feasibility.feasible()) {
            throw new InfeasiblePlanException(feasibility.reason(), feasibility.requiredBytes(),
                    feasibility.availableBytes());
        }
        PartitionPlan plan = fallback.plan(model, ordered);
        return new Replan(plan, changed(current, plan), "no spare or neighbour could take the lost stage"
                + (lost.size() > 1 ? "s" : "") + ": every stage planned anew " + plan.stages().stream()
                .map(s -> s.nodeId() + " " + range(s.layerStart(), s.layerEnd())).toList());
    }

    /**
     * The nodes whose part in {@code plan} differs from the one they held in {@code current} (or is new): every holder of
     * a stage whose range or expert groups changed.
     */
    private static List<String> changed(List<StageAssignment> current, PartitionPlan plan) {
        return plan.stages().stream().filter(s -> !current.contains(s)).flatMap(s -> s.holders().stream()).toList();
    }

    private static String range(int start, int end) {
        return "[" + start + ", " + end + ")";
    }
}
