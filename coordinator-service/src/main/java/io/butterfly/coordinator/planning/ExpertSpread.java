package io.butterfly.coordinator.planning;

import io.butterfly.common.text.ByteSize;
import java.util.ArrayList;
import java.util.List;

/**
 * Plans a mixture of experts with each stage's routed experts spread over {@code groups} workers (docs/sharding.md,
 * "Planning expert groups"): the layers over the first {@code workers / groups} workers by the configured planner,
 * each stage's worker holding group 0 (attention, router, shared expert and the first experts), and the following
 * workers, {@code groups - 1} per stage in pipeline order, one further group each. The experts are shared out evenly,
 * the first groups taking one more when they do not divide. Memory: a stage's worker must hold its stage less the
 * experts other groups take, a group's worker its experts of the stage's sparse layers and a stage's headroom.
 * Pure: the same inputs give the same plan; workers beyond {@code stages * groups} are spares.
 */
public final class ExpertSpread {

    private ExpertSpread() {
    }

    /** {@code groups} value meaning: as few groups as let every worker hold its part ({@link #plan}). */
    public static final int BY_MEMORY = 0;

    /**
     * @param groups expert groups per stage (1: experts are not spread, the layer planner's plan as it is;
     *               {@link #BY_MEMORY}: the fewest groups, from 1 up, whose plan every worker can hold)
     * @throws InfeasiblePlanException a worker cannot hold its part
     */
    public static PartitionPlan plan(ModelFootprint model, ExpertFootprint experts, List<WorkerCapacity> workers,
                                     int groups, PartitionPlanner layers) {
        PartitionPlanner.requireValid(model, workers);
        if (groups != BY_MEMORY) {
            return planWith(model, experts, workers, groups, layers);
        }
        InfeasiblePlanException unspread = null;
        int most = experts.sparse() ? Math.min(experts.experts(), workers.size()) : 1;
        for (int g = 1; g <= most; g++) {
            try {
                return planWith(model, experts, workers, g, layers);
            } catch (InfeasiblePlanException e) {
                unspread = unspread == null ? e : unspread;
            }
        }
        throw unspread; // no number of groups fits: the reason the experts could not stay together
    }

    private static PartitionPlan planWith(ModelFootprint model, ExpertFootprint experts, List<WorkerCapacity> workers,
                                          int groups, PartitionPlanner layers) {
        int g = Math.min(groups, experts.experts());
        if (!experts.sparse() || g <= 1 || workers.size() < g) {
            return layers.plan(model, workers);
        }
        int stages = Math.min(model.numLayers(), workers.size() / g);
        List<WorkerCapacity> stageWorkers = workers.subList(0, stages);
        try {
            return spread(model, experts, workers, g, layers.plan(model, stageWorkers));
        } catch (InfeasiblePlanException e) {
            // The layer planner sized each stage's worker for all of its experts: plan the ranges again against
            // what group 0 keeps, so a stage larger than one worker can be served by its groups.
            return spread(model, experts, workers, g, layers.plan(keptByGroupZero(model, experts, g), stageWorkers));
        }
    }

    private static PartitionPlan spread(ModelFootprint model, ExpertFootprint experts, List<WorkerCapacity> workers,
                                        int g, PartitionPlan plan) {
        List<StageAssignment> out = new ArrayList<>();
        int next = plan.stages().size();
        for (StageAssignment s : plan.stages()) {
            List<WorkerCapacity> holders = new ArrayList<>();
            holders.add(byId(workers, s.nodeId()));
            for (int i = 1; i < g; i++) {
                holders.add(workers.get(next++));
            }
            out.add(spread(model, experts, s, holders));
        }
        return new PartitionPlan(out);
    }

    /**
     * The model as the stages' workers hold it with {@code g} groups: each sparse layer without the experts of groups
     * 1..g-1 (group 0, the first, takes the most when they do not divide).
     */
    static ModelFootprint keptByGroupZero(ModelFootprint model, ExpertFootprint experts, int g) {
        int kept = experts.experts() / g + (experts.experts() % g == 0 ? 0 : 1);
        long[] layers = model.layerBytes().clone();
        for (int l = 0; l < layers.length; l++) {
            layers[l] -= experts.bytes(l, l + 1, kept, experts.experts());
        }
        return new ModelFootprint(layers, model.embeddingBytes(), model.headBytes(), model.stageOverheadBytes(),
                model.kvBytesPerLayer());
    }

    /** Stage {@code s} with its experts spread evenly over {@code holders} (the stage's worker first). */
    static StageAssignment spread(ModelFootprint model, ExpertFootprint experts, StageAssignment s,
                                  List<WorkerCapacity> holders) {
        int n = holders.size();
        List<ExpertGroup> groups = new ArrayList<>();
        int first = 0;
        for (int i = 0; i < n; i++) {
            int count = experts.experts() / n + (i < experts.experts() % n ? 1 : 0);
            groups.add(new ExpertGroup(holders.get(i).nodeId(), first, first + count));
            first += count;
        }
        for (int i = 0; i < n; i++) {
            long need = need(model, experts, s, groups.get(i), i == 0);
            long memory = holders.get(i).memoryBytes();
            if (memory > 0 && need > memory) {
                throw new InfeasiblePlanException("InsufficientResources: expert group " + i + " of layers ["
                        + s.layerStart() + ", " + s.layerEnd() + ") needs " + ByteSize.human(need) + ", worker "
                        + holders.get(i).nodeId() + " has " + ByteSize.human(memory), need, memory);
            }
        }
        return new StageAssignment(s.nodeId(), s.layerStart(), s.layerEnd(), s.hasEmbedding(), s.hasHead(), groups);
    }

    /**
     * Memory of a group's worker: group 0 its stage less the other groups' experts, a later group its experts and a
     * stage's headroom.
     */
    static long need(ModelFootprint model, ExpertFootprint experts, StageAssignment s, ExpertGroup group,
                     boolean stageWorker) {
        long own = experts.bytes(s.layerStart(), s.layerEnd(), group.firstExpert(), group.endExpert());
        if (stageWorker) {
            long all = experts.bytes(s.layerStart(), s.layerEnd(), 0, experts.experts());
            return model.stageBytes(s.layerStart(), s.layerEnd()) - all + own;
        }
        return model.stageOverheadBytes() + own;
    }

    private static WorkerCapacity byId(List<WorkerCapacity> workers, String id) {
        return workers.stream().filter(w -> w.nodeId().equals(id)).findFirst().orElseThrow();
    }
}
