package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The replicated cluster state: an immutable value produced only by {@link ClusterReducer}. Maps keep
 * insertion order (join order, submission order) so every replica lists them identically.
 *
 * @param epoch            fencing token of the current assignment; never decreases
 * @param pipeline         node ids of the current plan in stage order
 * @param lastAppliedIndex log index of the last applied command
 * @param checks           outcome of the feasibility check and of the weights' cross-validation
 * @param plans            the newest assignments, oldest first: what each stage held in each recent epoch, so that
 *                         whoever resumes work across a re-plan can tell which stages kept their range (and so their
 *                         KV caches) from one epoch to the next
 * @param recovery         the latest recovery from a lost stage or a drain (ongoing while DEGRADED), or null
 * @param draining         nodes an operator asked to drain, in the order asked: planned away, then they leave
 * @param jobs             batch jobs by id, in the order defined (docs/jobs.md): their metadata only, the datasets'
 *                         bytes stay out of the log
 * @param jobWork          per job id, its batches handed out and its results (a job absent: nothing yet)
 */
public record ClusterState(SystemState system, long epoch, String modelId, String merkleRoot, int expectedWorkers,
                           String statusMessage, Map<String, NodeRecord> nodes, List<String> pipeline,
                           Map<String, TaskRecord> tasks, long lastAppliedIndex, BootstrapChecks checks,
                           List<CheckpointRecord> checkpoints, ClusterConfig config, List<EpochPlan> plans,
                           Recovery recovery, List<String> draining, Map<String, JobRecord> jobs,
                           Map<String, JobWork> jobWork) {

    /** Checkpoints kept in the state (the oldest are dropped). */
    public static final int MAX_CHECKPOINTS = 16;
    /** Assignments kept in the state (the oldest are dropped). */
    public static final int MAX_PLANS = 16;

    public ClusterState {
        checks = checks == null ? BootstrapChecks.NONE : checks;
        checkpoints = checkpoints == null ? List.of() : List.copyOf(checkpoints);
        nodes = Collections.unmodifiableMap(new LinkedHashMap<>(nodes));
        pipeline = List.copyOf(pipeline);
        tasks = Collections.unmodifiableMap(new LinkedHashMap<>(tasks));
        plans = plans == null ? List.of() : List.copyOf(plans);
        draining = draining == null ? List.of() : List.copyOf(draining);
        jobs = jobs == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(jobs));
        jobWork = jobWork == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(jobWork));
    }

    public static ClusterState initial() {
        return new ClusterState(SystemState.UNINITIALIZED, 0, null, null, 0, "waiting for bootstrap",
                Map.of(), List.of(), Map.of(), 0, BootstrapChecks.NONE, List.of(), null, List.of(), null, List.of(), Map.of(), Map.of());
    }

    ClusterState withSystem(SystemState next, String message) {
        return new ClusterState(next, epoch, modelId, merkleRoot, expectedWorkers, message, nodes, pipeline, tasks,
                lastAppliedIndex, checks, checkpoints, config, plans, recovery, draining, jobs, jobWork);
    }

    ClusterState withModel(String model, String root, int workers) {
        return new ClusterState(system, epoch, model, root, workers, statusMessage, nodes, pipeline, tasks,
                lastAppliedIndex, checks, checkpoints, config, plans, recovery, draining, jobs, jobWork);
    }

    ClusterState withNodes(Map<String, NodeRecord> next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, next, pipeline,
                tasks, lastAppliedIndex, checks, checkpoints, config, plans, recovery, draining, jobs, jobWork);
    }

    ClusterState withNode(NodeRecord node) {
        Map<String, NodeRecord> next = new LinkedHashMap<>(nodes);
        next.put(node.nodeId(), node);
        return withNodes(next);
    }

    ClusterState withAssignment(long nextEpoch, List<String> nextPipeline, Map<String, NodeRecord> nextNodes) {
        return new ClusterState(system, nextEpoch, modelId, merkleRoot, expectedWorkers, statusMessage, nextNodes,
                nextPipeline, tasks, lastAppliedIndex, checks, checkpoints, config, plans, recovery, draining, jobs, jobWork);
    }

    ClusterState withTasks(Map<String, TaskRecord> next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                next, lastAppliedIndex, checks, checkpoints, config, plans, recovery, draining, jobs, jobWork);
    }

    ClusterState withIndex(long index) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, index, checks, checkpoints, config, plans, recovery, draining, jobs, jobWork);
    }

    ClusterState withCheckpoints(List<CheckpointRecord> next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, checks, next, config, plans, recovery, draining, jobs, jobWork);
    }

    ClusterState withChecks(BootstrapChecks next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, next, checkpoints, config, plans, recovery, draining, jobs, jobWork);
    }

    ClusterState withConfig(ClusterConfig next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, checks, checkpoints, next, plans, recovery, draining, jobs, jobWork);
    }

    ClusterState withPlans(List<EpochPlan> next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, checks, checkpoints, config, next, recovery, draining, jobs, jobWork);
    }

    ClusterState withRecovery(Recovery next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, checks, checkpoints, config, plans, next, draining, jobs, jobWork);
    }

    ClusterState withDraining(List<String> next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, checks, checkpoints, config, plans, recovery, next, jobs, jobWork);
    }

    ClusterState withJobs(Map<String, JobRecord> next) {
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, checks, checkpoints, config, plans, recovery, draining, next, jobWork);
    }

    ClusterState withJobWork(String jobId, JobWork work) {
        Map<String, JobWork> next = new LinkedHashMap<>(jobWork);
        next.put(jobId, work);
        return new ClusterState(system, epoch, modelId, merkleRoot, expectedWorkers, statusMessage, nodes, pipeline,
                tasks, lastAppliedIndex, checks, checkpoints, config, plans, recovery, draining, jobs, next);
    }

    /** What became of the job's batches so far. */
    public JobWork workOf(String jobId) {
        return jobWork.getOrDefault(jobId, JobWork.EMPTY);
    }

    /** The stages of the current plan, in pipeline order (none before the first plan). */
    public List<StageAssignment> stages() {
        return plan(epoch).map(EpochPlan::stages).orElseGet(() -> pipeline.stream().map(id -> {
            NodeRecord n = nodes.get(id); // a snapshot written before plans were kept
            return new StageAssignment(id, n.layerStart(), n.layerEnd(), n.hasEmbedding(), n.hasHead());
        }).toList());
    }

    /**
     * The current plan's pipelines (issue #52), each its stages in pipeline order; one unless the coordinator plans
     * several ({@code butterfly.coordinator.planning.pipelines}), none before the first plan.
     */
    public List<List<StageAssignment>> pipelines() {
        return EpochPlan.split(stages());
    }

    /**
     * Whether {@code pipeline} (one of {@link #pipelines()}) can take steps now, whatever the others do: every worker
     * holding a part of it is operational, not draining, has its partition of this epoch READY, and has held its stage
     * since an epoch whose weights were cross-validated. So while a lost stage of another pipeline is planned away
     * (the system DEGRADED), the pipelines it did not touch go on serving.
     */
    public boolean pipelineServes(List<StageAssignment> pipeline) {
        if (merkleRoot == null || pipeline.isEmpty()) {
            return false;
        }
        for (StageAssignment stage : pipeline) {
            for (String id : stage.holders()) {
                NodeRecord n = nodes.get(id);
                if (n == null || n.lost() || draining.contains(id) || n.partition() != PartitionState.READY
                        || n.state() == WorkerState.FAILED || !validatedSince(stageKeptSince(id))) {
                    return false;
                }
            }
        }
        return true;
    }

    /**
     * Per pipeline of {@link #pipelines()}, whether it takes steps now: all of them while the system serves (READY or
     * COMPUTING); while it is DEGRADED, with several pipelines, those a lost stage did not touch
     * ({@link #pipelineServes}). One pipeline serves exactly when the system does, as before pipelines were several.
     */
    public List<Boolean> servingPipelines() {
        List<List<StageAssignment>> all = pipelines();
        boolean serves = system.acceptsWork();
        if (all.size() <= 1) {
            return all.isEmpty() ? List.of() : List.of(serves);
        }
        return all.stream().map(p -> serves || (system == SystemState.DEGRADED && pipelineServes(p))).toList();
    }

    /** Whether a new request can run now: a pipeline serves (see {@link #servingPipelines()}). */
    public boolean acceptsNewWork() {
        return servingPipelines().contains(Boolean.TRUE);
    }

    /**
     * The epoch {@code pipeline}'s steps carry (docs/scale-out.md): with several pipelines, the first epoch from which
     * it has been a pipeline of every plan up to this one, unchanged (its stages, their layers and workers, in order),
     * so a re-plan of another pipeline neither rebuilds its engine nor fences off its steps in flight; its workers run
     * steps of any epoch from it up to theirs. With one pipeline, the current epoch, as before.
     */
    public long stepsEpoch(List<StageAssignment> pipeline) {
        if (pipelines().size() <= 1 || plan(epoch).isEmpty()) {
            return epoch;
        }
        long since = epoch;
        for (int i = plans.size() - 2; i >= 0; i--) {
            EpochPlan earlier = plans.get(i);
            if (earlier.epoch() != plans.get(i + 1).epoch() - 1 || !EpochPlan.split(earlier.stages()).contains(pipeline)) {
                break; // a gap in the kept history, or another pipeline then
            }
            since = earlier.epoch();
        }
        return since;
    }

    /** {@link #stepsEpoch} of the pipeline {@code nodeId} holds a part of; the current epoch if none. */
    public long stepsEpochOf(String nodeId) {
        for (List<StageAssignment> p : pipelines()) {
            if (p.stream().anyMatch(stage -> stage.holders().contains(nodeId))) {
                return stepsEpoch(p);
            }
        }
        return epoch;
    }

    /** Whether the weights of an epoch from {@code from} up to the current one were cross-validated. */
    private boolean validatedSince(long from) {
        WeightValidation v = checks.validation();
        if (from <= 0) {
            return false;
        }
        if (v != null && v.status() == WeightValidation.Status.VALID && v.epoch() >= from && v.epoch() <= epoch) {
            return true;
        }
        return checkpoints.stream().anyMatch(c -> c.epoch() >= from && c.epoch() <= epoch);
    }

    /** The assignment of {@code epoch}, if the state still holds it. */
    public Optional<EpochPlan> plan(long epochOfPlan) {
        return plans.stream().filter(p -> p.epoch() == epochOfPlan).findFirst();
    }

    /**
     * The first epoch from which {@code nodeId} has held its current stage (same layer range, embedding and head) in
     * every assignment up to the current one: its stage, loaded weights and KV caches are unchanged since then. The
     * current epoch when its stage is new; 0 when it holds no stage.
     */
    public long stageKeptSince(String nodeId) {
        Optional<StageAssignment> now = plan(epoch).flatMap(p -> p.partOf(nodeId));
        if (now.isEmpty()) {
            return 0;
        }
        long since = epoch;
        for (int i = plans.size() - 2; i >= 0; i--) {
            EpochPlan earlier = plans.get(i);
            if (earlier.epoch() != plans.get(i + 1).epoch() - 1 || !now.equals(earlier.partOf(nodeId))) {
                break; // a gap in the kept history, or another stage then
            }
            since = earlier.epoch();
        }
        return since;
    }

    /**
     * The nodes whose stage (layer range, embedding and head) is the same in {@code from} and in every assignment up
     * to {@code to}: they kept their loaded weights and every sequence's KV cache across the re-plans in between. Empty
     * when the state no longer holds one of those assignments.
     */
    public List<String> keptStages(long from, long to) {
        Optional<EpochPlan> last = plan(to);
        if (last.isEmpty() || from > to) {
            return List.of();
        }
        return last.get().stages().stream().map(StageAssignment::nodeId).filter(id -> keptBetween(id, from, to)).toList();
    }

    private boolean keptBetween(String nodeId, long from, long to) {
        Optional<StageAssignment> stage = plan(to).flatMap(p -> p.stageOf(nodeId));
        for (long e = from; e < to; e++) {
            Optional<EpochPlan> then = plan(e);
            if (then.isEmpty() || !stage.equals(then.get().stageOf(nodeId))) {
                return false;
            }
        }
        return true;
    }

    /**
     * Stages of the current plan that can no longer serve: their node was declared FAILED by the failure detector (it
     * is gone) or is being drained. The leader plans them away.
     */
    public List<String> lostStages() {
        return planned().stream().filter(id -> draining.contains(id) || nodes.get(id).lost()).toList();
    }

    /**
     * Bytes a projection weight takes in the widest worker engine (4 float32 where a worker did not say): a stage must
     * fit whichever worker it lands on, so the planner sizes weights by this.
     */
    public int widestWeightBytes() {
        return nodes.values().stream().mapToInt(n -> n.info().weightBytes() > 0 ? n.info().weightBytes() : Float.BYTES)
                .max().orElse(Float.BYTES);
    }

    /**
     * Every worker holding a part of the current plan: the pipeline's stages, then the workers holding expert groups
     * of them (docs/sharding.md), which take no step of their own but are assigned, loaded and watched as stages are.
     */
    public List<String> planned() {
        List<String> out = new ArrayList<>(pipeline);
        stages().forEach(s -> s.expertHolders().stream().filter(id -> !out.contains(id)).forEach(out::add));
        return out;
    }

    /** Joined workers outside the plan that could take a stage: operational, not draining. */
    public List<String> spares() {
        List<String> planned = planned();
        return nodes.values().stream().map(NodeRecord::nodeId)
                .filter(id -> !planned.contains(id) && !draining.contains(id))
                .filter(id -> nodes.get(id).state() == WorkerState.JOINED || nodes.get(id).state() == WorkerState.READY)
                .toList();
    }

    /** Whether every stage of the current plan reported its partition READY and none is FAILED. */
    public boolean pipelineReady() {
        return !pipeline.isEmpty() && planned().stream()
                .allMatch(id -> nodes.get(id).partition() == PartitionState.READY
                        && nodes.get(id).state() != WorkerState.FAILED);
    }

    /** Where the ongoing recovery stands; null when none is ongoing. */
    public RecoveryPhase recoveryPhase() {
        if (recovery == null || !recovery.ongoing()) {
            return null;
        }
        if (!lostStages().isEmpty()) {
            Feasibility f = checks.feasibility();
            return f != null && !f.feasible() && f.atMs() >= recovery.startedAtMs() ? RecoveryPhase.WAITING_FOR_CAPACITY
                    : RecoveryPhase.REPLANNING;
        }
        if (planned().stream().anyMatch(id -> nodes.get(id).loadFailedPermanently())) {
            return RecoveryPhase.STALLED;
        }
        if (!pipelineReady()) {
            return RecoveryPhase.LOADING;
        }
        WeightValidation v = checks.validation();
        return v != null && v.epoch() == epoch && v.status() == WeightValidation.Status.INVALID ? RecoveryPhase.STALLED
                : RecoveryPhase.VALIDATING;
    }

    /**
     * Whether the cluster serves, or will again by itself: READY (or COMPUTING), or DEGRADED while it recovers; not
     * while it waits for capacity or for an operator. What a coordinator's readiness says.
     */
    public boolean servesOrRecovers() {
        RecoveryPhase phase = recoveryPhase();
        return system == SystemState.READY || system == SystemState.COMPUTING
                || (system == SystemState.DEGRADED && (phase == null || phase.recovering()));
    }

    /** Number of tasks still executing. */
    public long inFlightTasks() {
        return tasks.values().stream().filter(t -> !t.state().terminal()).count();
    }

    /** The task a request with {@code idempotencyKey} started (ended or not, while the state keeps it); null if none. */
    public TaskRecord taskWithKey(String idempotencyKey) {
        return TaskRecord.holdingKey(tasks.values(), idempotencyKey);
    }
}
