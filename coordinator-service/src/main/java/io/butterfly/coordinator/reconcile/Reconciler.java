package io.butterfly.coordinator.reconcile;

import io.butterfly.common.error.Backoff;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterConfig;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.Feasibility;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.NodeRecord;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.planning.ExpertFootprint;
import io.butterfly.coordinator.planning.ExpertSpread;
import io.butterfly.coordinator.planning.HeadSpread;
import io.butterfly.coordinator.planning.PartitionPlan;
import io.butterfly.coordinator.planning.FeasibilityCheck;
import io.butterfly.coordinator.planning.FeasibilityReport;
import io.butterfly.coordinator.planning.InfeasiblePlanException;
import io.butterfly.coordinator.planning.ModelFootprint;
import io.butterfly.coordinator.planning.MultiPipelinePlanner;
import io.butterfly.coordinator.planning.PartitionPlanner;
import io.butterfly.coordinator.planning.PipelinesPlan;
import io.butterfly.coordinator.planning.Replanner;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.planning.WorkerCapacity;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The leader's control plane as one function (docs/architecture.md, "The leader's control plane"): from the replicated
 * state and what the leader observes, the actions due next. Level-triggered, as a Kubernetes controller is: it compares
 * what is with what should be, not what happened, so a missed event, a lost reply or a new leader only change its next
 * answer. Pure (no clock, no I/O, no threads): {@link ControlLoop} carries the actions out and feeds back what became of
 * them.
 *
 * <p>What it drives: the bootstrap (the log's first entries, the model, the workers' joins, the first plan), every
 * worker's assignment (announced, announced again with a new leader's term, sent again to a worker that lost it or
 * whose load may succeed on another try), the cross-validation of each epoch's weights, the re-plan when a stage is
 * lost or drained, and the departure of drained nodes and of spares discovery no longer lists.
 */
public final class Reconciler {

    /**
     * @param modelId         the model to serve (as the registry knows it)
     * @param expectedWorkers the workers the first plan waits for (more join as spares)
     * @param clusterName     the cluster's name in its committed configuration
     * @param protocolVersion the protocol version (major.minor.patch) this coordinator speaks, committed with it
     * @param plannerName     the configured planner's name, recorded with its verdicts
     * @param expertGroups    workers each stage's routed experts are spread over (1: a stage holds all of its experts;
     *                        docs/sharding.md, "Planning expert groups"); a dense model ignores it
     * @param pipelines       pipelines the first plan forms over the joined workers (docs/scale-out.md): 1 (one
     *                        pipeline, the others spares, as always), k, or 0 for as many as maximise the expected
     *                        throughput ({@link MultiPipelinePlanner})
     * @param spares          with several pipelines, workers kept out of every pipeline to replace a lost stage
     * @param headShards      workers each stage of a dense Llama-family model splits its layers over by heads (1: whole
     *                        layers; docs/sharding.md, "Head parallelism"); a mixture of experts ignores it
     */
    public record Settings(String modelId, int expectedWorkers, String clusterName, String protocolVersion,
                           String plannerName, int expertGroups, int pipelines, int spares, int headShards) {

        public Settings(String modelId, int expectedWorkers, String clusterName, String protocolVersion,
                        String plannerName, int expertGroups, int pipelines, int spares) {
            this(modelId, expectedWorkers, clusterName, protocolVersion, plannerName, expertGroups, pipelines, spares, 1);
        }

        public Settings {
            if (expertGroups < 0) { // 0: as few groups as the workers' memory allows (ExpertSpread.BY_MEMORY)
                throw new IllegalArgumentException("expert groups must be at least 0, got " + expertGroups);
            }
            if (headShards < 1) {
                throw new IllegalArgumentException("head shards must be at least 1, got " + headShards);
            }
            if (pipelines < 0 || spares < 0) {
                throw new IllegalArgumentException("pipelines and spares must not be negative, got " + pipelines
                        + " and " + spares);
            }
        }

        public Settings(String modelId, int expectedWorkers, String clusterName, String protocolVersion,
                        String plannerName, int expertGroups) {
            this(modelId, expectedWorkers, clusterName, protocolVersion, plannerName, expertGroups, 1, 0);
        }

        public Settings(String modelId, int expectedWorkers, String clusterName, String protocolVersion,
                        String plannerName) {
            this(modelId, expectedWorkers, clusterName, protocolVersion, plannerName, 1);
        }

        public Settings withExpertGroups(int groups) {
            return new Settings(modelId, expectedWorkers, clusterName, protocolVersion, plannerName, groups, pipelines,
                    spares, headShards);
        }

        public Settings withHeadShards(int shards) {
            return new Settings(modelId, expectedWorkers, clusterName, protocolVersion, plannerName, expertGroups,
                    pipelines, spares, shards);
        }

        public Settings withPipelines(int count, int keptSpare) {
            return new Settings(modelId, expectedWorkers, clusterName, protocolVersion, plannerName, expertGroups,
                    count, keptSpare, headShards);
        }

        /** Whether the plan may hold more than one pipeline. */
        boolean multiple() {
            return pipelines != 1;
        }
    }

    /** A failed commit or model fetch is tried again after this. */
    static final long RETRY_MS = 1_000;
    /** Assignments not accepted this many times in a row are recorded as a TIMEOUT load failure. */
    static final int MAX_ASSIGN_ATTEMPTS = 10;
    /** A stage that has not started loading, or whose load failed for a reason worth retrying, is sent its assignment again this often. */
    static final long RESEND_INTERVAL_MS = 60_000;
    /** A cross-validation that missed reports is run again after this. */
    static final long VALIDATE_RETRY_MS = 2_000;
    /** A drained worker that cannot be told to leave is let go after this many attempts. */
    static final int MAX_DISMISS_ATTEMPTS = 5;

    private static final Set<SystemState> ASSIGNABLE = EnumSet.of(SystemState.BOOTSTRAPPING, SystemState.READY,
            SystemState.DEGRADED);
    private static final Set<SystemState> MEMBERSHIP_OPEN = EnumSet.of(SystemState.BOOTSTRAPPING, SystemState.READY,
            SystemState.COMPUTING, SystemState.DEGRADED);

    private final Settings settings;
    private final PartitionPlanner planner;

    public Reconciler(Settings settings, PartitionPlanner planner) {
        this.settings = settings;
        this.planner = planner;
    }

    /** The actions due now, in the order they should be taken (commits first: each changes what comes after). */
    public List<Action> next(ClusterState s, Observations o) {
        if (s.system() == SystemState.UNINITIALIZED) {
            return due(o, "bootstrap", RETRY_MS) ? List.of(Action.Commit.of("bootstrap",
                    new ClusterCommand.Bootstrap(settings.modelId(), settings.expectedWorkers(), o.nowMs()))) : List.of();
        }
        if (!MEMBERSHIP_OPEN.contains(s.system())) {
            return List.of(); // shutting down: nothing more to do
        }
        List<Action> out = new ArrayList<>();
        config(s, o, out);
        model(s, o, out);
        membership(s, o, out);
        plan(s, o, out);
        assignments(s, o, out);
        validation(s, o, out);
        departures(s, o, out);
        return out;
    }

    /**
     * The cluster configuration (docs/bootstrap-protocol.md §5.3 ConfigChange) when it differs from the committed one.
     * No stage replicas yet: every stage is needed (quorum = the pipeline's size) and no failure is tolerated.
     */
    private void config(ClusterState s, Observations o, List<Action> out) {
        int quorum = s.pipeline().isEmpty() ? Math.max(1, s.expectedWorkers()) : s.planned().size();
        ClusterConfig want = new ClusterConfig(settings.clusterName(), quorum, 0, s.nodes().size(),
                settings.protocolVersion());
        if (!want.equals(s.config()) && due(o, "config", RETRY_MS)) {
            out.add(Action.Commit.of("config", new ClusterCommand.ConfigChange(want, o.nowMs())));
        }
    }

    /** The model is fetched and verified before anything is planned, and its Merkle root pinned in the log. */
    private void model(ClusterState s, Observations o, List<Action> out) {
        if (o.model() == null) {
            if (due(o, "fetch-model", RETRY_MS)) {
                out.add(new Action.FetchModel());
            }
        } else if (s.merkleRoot() == null && s.system() == SystemState.BOOTSTRAPPING && due(o, "model-resolved", RETRY_MS)) {
            out.add(Action.Commit.of("model-resolved", new ClusterCommand.ModelResolved(o.model().modelId(),
                    o.model().merkleRoot(), o.nowMs())));
        }
    }

    /**
     * Every worker discovery lists is a member (after the first plan, a spare); a member that holds no stage and that
     * discovery no longer lists has left (it stopped, or its entry expired).
     */
    private void membership(ClusterState s, Observations o, List<Action> out) {
        if (o.members() == null) {
            return; // discovery could not be asked: nothing is known about who comes and goes
        }
        Set<String> listed = new HashSet<>();
        o.members().stream().sorted(Comparator.comparing(NodeInfo::nodeId)).forEach(m -> {
            listed.add(m.nodeId());
            if (!s.nodes().containsKey(m.nodeId()) && due(o, "join/" + m.nodeId(), RETRY_MS)) {
                out.add(Action.Commit.of("join/" + m.nodeId(), new ClusterCommand.NodeJoined(m, o.nowMs())));
            }
        });
        for (String id : s.nodes().keySet()) {
            if (!listed.contains(id) && !s.planned().contains(id) && !s.draining().contains(id)
                    && due(o, "gone/" + id, RETRY_MS)) {
                out.add(Action.Commit.of("gone/" + id, new ClusterCommand.NodeLeft(id, "no longer listed by discovery",
                        o.nowMs())));
            }
        }
    }

    /** The first plan once the expected workers joined; a new one when a stage of the current plan is lost. */
    private void plan(ClusterState s, Observations o, List<Action> out) {
        if (o.model() == null || s.merkleRoot() == null || !ASSIGNABLE.contains(s.system())) {
            return;
        }
        ModelFootprint model = o.model().footprint();
        if (s.epoch() == 0) {
            if (s.system() == SystemState.BOOTSTRAPPING) {
                firstPlan(s, o, model, out);
            }
            return;
        }
        List<String> lost = s.lostStages();
        if (lost.isEmpty()) {
            grow(s, o, model, out);
            return;
        }
        String why = String.join(", ", lost.stream()
                .map(id -> id + (s.draining().contains(id) ? " drained"
                        : s.nodes().get(id).health().byzantine() ? " FAILED (Byzantine)" : " FAILED")).toList());
        try {
            Replanned replan = replan(s, model, o.model().experts(), Set.copyOf(lost), planner);
            assign(s, o, FeasibilityCheck.check(model, capacities(s, replan.stages().stream()
                            .map(StageAssignment::nodeId).toList())), replan.stages(),
                    why + ": " + replan.summary(), out);
        } catch (InfeasiblePlanException e) {
            verdict(s, o, FeasibilityReport.infeasible(e), out);
        }
    }

    /**
     * A re-plan's stages (every pipeline's, one after the other), the workers holding a part of them, and what changed.
     */
    record Replanned(List<StageAssignment> stages, List<String> holders, String summary) {
    }

    /**
     * The plan without the {@code lost} stages, over the operational workers. One pipeline: re-planned over its other
     * stages and the spares. Several: only the pipelines that lost a stage are re-planned, each over its survivors and
     * the spares left; the others keep their stages (and serve on). A pipeline that cannot be mended is dropped, its
     * survivors becoming spares, as long as another pipeline remains.
     *
     * @throws InfeasiblePlanException they cannot hold the model
     */
    static Replanned replan(ClusterState s, ModelFootprint model, ExpertFootprint experts, Set<String> lost,
                            PartitionPlanner planner) {
        List<List<StageAssignment>> pipelines = s.pipelines();
        List<String> pool = new ArrayList<>(s.spares().stream().filter(id -> !lost.contains(id)).toList());
        List<StageAssignment> stages = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        InfeasiblePlanException refused = null;
        for (int i = 0; i < pipelines.size(); i++) {
            List<StageAssignment> pipeline = pipelines.get(i);
            List<String> holders = holders(pipeline);
            if (holders.stream().noneMatch(lost::contains)) {
                stages.addAll(pipeline);
                continue;
            }
            List<String> candidates = new ArrayList<>(holders);
            candidates.removeAll(lost);
            candidates.addAll(pool);
            String name = pipelines.size() > 1 ? "pipeline " + i + ": " : "";
            try {
                Replanner.Replan r = Replanner.replan(model, experts, pipeline,
                        lost.stream().filter(holders::contains).collect(java.util.stream.Collectors.toSet()),
                        capacities(s, candidates), planner);
                stages.addAll(r.plan().stages());
                pool.removeAll(r.plan().holders());
                holders.stream().filter(id -> !lost.contains(id) && !r.plan().holders().contains(id)).forEach(pool::add);
                notes.add(name + r.summary());
            } catch (InfeasiblePlanException e) {
                if (pipelines.size() == 1) {
                    throw e;
                }
                refused = e;
                holders.stream().filter(id -> !lost.contains(id)).forEach(pool::add);
                notes.add(name + "dropped, its survivors spares (" + e.getMessage() + ")");
            }
        }
        if (stages.isEmpty()) {
            throw refused != null ? refused : new InfeasiblePlanException("no pipeline is planned to re-plan", 0, 0);
        }
        return new Replanned(stages, holders(stages), String.join("; ", notes));
    }

    /**
     * Joined workers form a pipeline more once the spares hold one beyond the configured spares, when the count is the
     * planner's (pipelines = 0) or below the configured one (a pipeline was dropped). Only while READY, so that one
     * epoch change settles before the next. The serving pipelines keep their stages and workers: the new epoch adds
     * the new pipelines after them, planned over the spares alone as the first plan plans the pool.
     */
    private void grow(ClusterState s, Observations o, ModelFootprint model, List<Action> out) {
        int current = s.pipelines().size();
        if (!settings.multiple() || s.system() != SystemState.READY
                || (settings.pipelines() > 0 && current >= settings.pipelines())) {
            return;
        }
        List<String> spares = s.spares().stream().filter(id -> !s.nodes().get(id).lost()).sorted().toList();
        if (spares.size() <= settings.spares()) {
            return;
        }
        List<WorkerCapacity> pool = capacities(s, spares);
        if (!FeasibilityCheck.feasible(model, pool)) {
            return; // the usual case while the pool grows: not enough for a pipeline yet, asked without planning
        }
        PipelinesPlan added;
        try {
            added = new MultiPipelinePlanner(planner).plan(model, pool, settings.spares(),
                    settings.pipelines() == 0 ? 0 : settings.pipelines() - current);
        } catch (InfeasiblePlanException e) {
            return; // not yet: the spares stay spares (no verdict, the cluster serves as it is)
        }
        List<StageAssignment> stages = new ArrayList<>(s.stages());
        added.pipelines().forEach(p -> stages.addAll(p.stages()));
        String which = added.pipelines().size() == 1 ? "pipeline " + current
                : "pipelines " + current + "-" + (current + added.pipelines().size() - 1);
        assign(s, o, FeasibilityCheck.check(model, capacities(s, stages.stream().map(StageAssignment::nodeId)
                        .toList())), stages,
                which + " added over " + String.join(", ", added.pipelines().stream()
                        .flatMap(p -> p.pipeline().stream()).toList()) + " (" + added.spares().size() + " spare"
                        + (added.spares().size() == 1 ? "" : "s") + " left)", out);
    }

    private static List<String> holders(List<StageAssignment> stages) {
        List<String> out = new ArrayList<>(stages.stream().map(StageAssignment::nodeId).toList());
        stages.forEach(a -> a.expertHolders().stream().filter(id -> !out.contains(id)).forEach(out::add));
        return out;
    }

    /**
     * The first {@code expectedWorkers} workers by id; when they cannot hold the model, as many more as it takes
     * (docs/initialization-and-bootstrap.md §7.6). Workers beyond those are spares.
     */
    private void firstPlan(ClusterState s, Observations o, ModelFootprint model, List<Action> out) {
        List<String> candidates = s.nodes().values().stream()
                .filter(n -> n.state() == WorkerState.JOINED || n.state() == WorkerState.READY)
                .map(n -> n.info().nodeId()).filter(id -> !s.draining().contains(id)).sorted().toList();
        int wanted = Math.max(1, s.expectedWorkers());
        if (candidates.size() < wanted) {
            return;
        }
        if (settings.multiple()) {
            firstPipelines(s, o, model, candidates, out);
            return;
        }
        FeasibilityReport report = null;
        for (int n = wanted; n <= candidates.size(); n++) {
            List<WorkerCapacity> workers = capacities(s, candidates.subList(0, n));
            report = FeasibilityCheck.check(model, workers);
            // A stage larger than any worker may still fit with its experts spread: let the plan decide.
            boolean spreadable = o.model().experts().sparse() && settings.expertGroups() != 1;
            if (report.feasible() || spreadable) {
                try {
                    PartitionPlan plan = settings.headShards() > 1 && o.model().headSlices() > 0
                            ? HeadSpread.plan(model, o.model().headSlices(), workers, settings.headShards(), planner)
                            : ExpertSpread.plan(model, o.model().experts(), workers, settings.expertGroups(), planner);
                    assign(s, o, report, plan.stages(), "bootstrap", out);
                    return;
                } catch (InfeasiblePlanException e) {
                    report = !report.feasible() ? report // spreading did not help: the check's own reason
                            : FeasibilityReport.infeasible(e); // enough memory in total, but not in the right places
                }
            }
        }
        verdict(s, o, report, out);
    }

    /**
     * Several pipelines over every joined worker (docs/scale-out.md): as many as configured, or as the planner finds
     * best, each split into stages by the configured planner, the configured spares kept out. Committed as one
     * assignment, the pipelines' stages one after the other.
     */
    private void firstPipelines(ClusterState s, Observations o, ModelFootprint model, List<String> candidates,
                                List<Action> out) {
        List<WorkerCapacity> workers = capacities(s, candidates);
        try {
            PipelinesPlan plan = new MultiPipelinePlanner(planner).plan(model, workers, settings.spares(),
                    settings.pipelines());
            List<StageAssignment> stages = plan.pipelines().stream().flatMap(p -> p.stages().stream()).toList();
            assign(s, o, FeasibilityCheck.check(model, capacities(s, stages.stream().map(StageAssignment::nodeId)
                            .toList())), stages,
                    "bootstrap: " + plan.pipelines().size() + " pipeline" + (plan.pipelines().size() > 1 ? "s" : "")
                            + ", " + plan.spares().size() + " spare" + (plan.spares().size() == 1 ? "" : "s"), out);
        } catch (InfeasiblePlanException e) {
            verdict(s, o, FeasibilityReport.infeasible(e), out);
        }
    }

    /** Commits the verdict and the plan of the next epoch. */
    private void assign(ClusterState s, Observations o, FeasibilityReport report, List<StageAssignment> stages,
                        String why, List<Action> out) {
        long epoch = s.epoch() + 1;
        String key = "plan/" + epoch;
        if (due(o, key, RETRY_MS)) {
            out.add(Action.Commit.of(key, new ClusterCommand.FeasibilityAssessed(feasibility(report, o.nowMs()), o.nowMs()),
                    new ClusterCommand.PartitionsAssigned(epoch, stages, why, o.nowMs())));
        }
    }

    /** An infeasible verdict is committed once, not again while it says the same (no assignment follows it). */
    private void verdict(ClusterState s, Observations o, FeasibilityReport report, List<Action> out) {
        Feasibility now = feasibility(report, o.nowMs());
        Feasibility recorded = s.checks().feasibility();
        boolean same = recorded != null && recorded.feasible() == now.feasible()
                && recorded.requiredBytes() == now.requiredBytes() && recorded.availableBytes() == now.availableBytes()
                && Objects.equals(recorded.reason(), now.reason()) && Objects.equals(recorded.planner(), now.planner());
        if (!same && due(o, "feasibility", RETRY_MS)) {
            out.add(Action.Commit.of("feasibility", new ClusterCommand.FeasibilityAssessed(now, o.nowMs())));
        }
    }

    private Feasibility feasibility(FeasibilityReport r, long atMs) {
        return new Feasibility(settings.plannerName(), r.feasible(), r.requiredBytes(), r.availableBytes(), r.reason(), atMs);
    }

    /**
     * Each stage of the current plan is told its assignment: once per leader term (the first time, or again with a new
     * leader's term, which the worker then reports to), and again when the state says it needs it: it came back
     * without its partition, it has not started loading a minute later, or its load failed for a reason another
     * attempt can mend (once a minute). An assignment not accepted ten times in a row is a TIMEOUT load failure.
     */
    private void assignments(ClusterState s, Observations o, List<Action> out) {
        if (s.epoch() == 0 || s.modelId() == null) {
            return;
        }
        for (String id : s.planned()) {
            NodeRecord n = s.nodes().get(id);
            if (n.lost() || s.draining().contains(id)) {
                continue; // planned away next
            }
            Attempts a = o.attempts(Action.assignKey(id, s.epoch(), o.term()));
            Assignment assignment = Assignment.current(s, n, o.term());
            if (!a.succeeded()) {
                if (n.loadFailed()) {
                    if (!n.loadFailedPermanently() && o.nowMs() - a.lastAttemptMs() >= RESEND_INTERVAL_MS) {
                        out.add(new Action.Assign(n.info(), assignment, "its load failed (" + n.failureCode() + ")"));
                    }
                } else if (a.failures() >= MAX_ASSIGN_ATTEMPTS) {
                    String key = "unaccepted/" + id + "/" + s.epoch();
                    if (due(o, key, RETRY_MS)) {
                        out.add(Action.Commit.of(key, new ClusterCommand.LoadFailed(id, s.epoch(), "TIMEOUT",
                                "assignment not accepted after " + a.failures() + " attempts", o.nowMs())));
                    }
                } else if (o.nowMs() >= a.lastAttemptMs() + assignBackoffMs(a.failures())) {
                    out.add(new Action.Assign(n.info(), assignment, a.failures() == 0 ? "announce" : "not accepted yet"));
                }
                continue;
            }
            String again = sendAgain(n, a, o.nowMs());
            if (again != null && o.nowMs() >= a.lastAttemptMs() + assignBackoffMs(a.failures())) {
                out.add(new Action.Assign(n.info(), assignment, again));
            }
        }
    }

    /** Why a stage that accepted its assignment must be sent it again, or null. */
    private static String sendAgain(NodeRecord n, Attempts a, long nowMs) {
        if (n.health().recoveredAtMs() > a.lastSuccessMs() && n.partition() != PartitionState.READY) {
            return "it came back without its partition";
        }
        boolean quiet = nowMs - a.lastAttemptMs() >= RESEND_INTERVAL_MS;
        if (quiet && n.loadFailed() && !n.loadFailedPermanently()) {
            return "its load failed (" + n.failureCode() + ")";
        }
        if (quiet && n.state() == WorkerState.JOINED && n.partition() == PartitionState.UNLOADED) {
            return "it has not started loading";
        }
        return null;
    }

    private static final Backoff ASSIGN_RETRY = Backoff.exponential(Duration.ofMillis(400), Duration.ofSeconds(5));

    /** 400 ms after the first failure, doubling up to 5 s. */
    static long assignBackoffMs(int failures) {
        return failures == 0 ? 0 : ASSIGN_RETRY.millis(failures - 1);
    }

    /** Once every stage of the epoch is loaded, its weights are cross-validated; a disagreement is final for the epoch. */
    private void validation(ClusterState s, Observations o, List<Action> out) {
        boolean waiting = s.system() == SystemState.BOOTSTRAPPING || s.system() == SystemState.DEGRADED;
        if (s.epoch() == 0 || o.model() == null || s.merkleRoot() == null || !waiting || !s.pipelineReady()
                || s.checks().weightsValidFor(s.epoch())) {
            return;
        }
        WeightValidation v = s.checks().validation();
        if (v != null && v.epoch() == s.epoch() && v.status() == WeightValidation.Status.INVALID) {
            return; // the loaded bytes will not change by asking again
        }
        Action.Validate validate = new Action.Validate(s.epoch());
        if (due(o, validate.key(), VALIDATE_RETRY_MS)) {
            out.add(validate);
        }
    }

    /**
     * A drained node leaves once the plan without it serves READY: it is told to leave (its process then idles, out of
     * the cluster), and its record goes.
     */
    private void departures(ClusterState s, Observations o, List<Action> out) {
        if (s.system() != SystemState.READY) {
            return;
        }
        for (String id : s.draining()) {
            NodeRecord n = s.nodes().get(id);
            if (s.planned().contains(id) || n == null) {
                continue; // its stage is planned away first
            }
            Attempts told = o.attempts("dismiss/" + id);
            if (!told.succeeded() && told.failures() < MAX_DISMISS_ATTEMPTS && !n.lost()) {
                if (due(o, "dismiss/" + id, RETRY_MS)) {
                    out.add(new Action.Dismiss(n.info(), s.epoch(), o.term()));
                }
            } else if (due(o, "left/" + id, RETRY_MS)) {
                out.add(Action.Commit.of("left/" + id, new ClusterCommand.NodeLeft(id, "drained", o.nowMs())));
            }
        }
    }

    /** What the planners know of {@code ids}: throughput (their host's best measurement) and memory. */
    private static List<WorkerCapacity> capacities(ClusterState s, List<String> ids) {
        return WorkerCapacities.of(s, ids);
    }

    /** Whether an action may be tried now: it never failed, or long enough ago. */
    private static boolean due(Observations o, String key, long retryMs) {
        Attempts a = o.attempts(key);
        return a.failures() == 0 || o.nowMs() - a.lastAttemptMs() >= retryMs;
    }
}
