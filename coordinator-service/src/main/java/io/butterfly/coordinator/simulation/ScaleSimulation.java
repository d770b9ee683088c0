package io.butterfly.coordinator.simulation;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRequest;
import io.butterfly.coordinator.cluster.WeightValidation;
import io.butterfly.coordinator.liveness.DetectorSettings;
import io.butterfly.coordinator.liveness.HeartbeatTracker;
import io.butterfly.coordinator.liveness.LivenessPolicy;
import io.butterfly.coordinator.planning.ModelFootprint;
import io.butterfly.coordinator.planning.MultiPipelinePlanner;
import io.butterfly.coordinator.planning.PartitionPlanner;
import io.butterfly.coordinator.planning.PlannerKind;
import io.butterfly.coordinator.planning.Replanner;
import io.butterfly.coordinator.planning.WorkerCapacity;
import io.butterfly.coordinator.reconcile.Action;
import io.butterfly.coordinator.reconcile.Attempts;
import io.butterfly.coordinator.reconcile.Observations;
import io.butterfly.coordinator.reconcile.Reconciler;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Set;

/**
 * The coordinator's control plane against {@code N} simulated workers in one process (issue #52, docs/scale-out.md):
 * the real {@link Reconciler} (bootstrap, membership, plans, re-plans, validation), the real failure detector
 * ({@link HeartbeatTracker}'s phi-accrual detectors judged by {@link LivenessPolicy} every 25 ms, production
 * settings), the real planners and the real reducer behind the control log's entry encoding. The workers are events
 * on a simulated clock: a heartbeat every 100 ms each (the production rate), an assignment loaded after a simulated
 * time, a kill (its heartbeat stream closes, as a killed process's socket does) or a join on a schedule. Nothing
 * sleeps; what is measured is the coordinator's own work, as thread CPU time per second of simulated time.
 *
 * <p>Not simulated: Raft's replication and disk (one log entry is counted in bytes, not written), gRPC (a heartbeat is
 * one call of the tracker), and the engine's steps (the simulated pipeline serves no tokens; the task records a request
 * leaves in the log are committed at a steady request rate).
 */
public final class ScaleSimulation {

    /**
     * @param workers        simulated workers at the start
     * @param layers         the model's transformer layers
     * @param layerBytes     bytes of one layer (weights and KV cache) as the workers hold it
     * @param workerMemory   memory of each worker
     * @param simulatedMs    simulated time after the bootstrap
     * @param killEveryMs    a worker is killed this often (alternately a stage and a spare)
     * @param joinEveryMs    a new worker joins this often
     * @param loadMs         simulated time a worker takes to load an assignment
     * @param requestsPerSec requests whose task events are recorded (32 to an entry, as a busy replica batches them)
     * @param seed           of the workers' throughputs and the heartbeats' jitter
     */
    public record Settings(int workers, int layers, long layerBytes, long workerMemory, long simulatedMs,
                           long killEveryMs, long joinEveryMs, long loadMs, int requestsPerSec, long seed) {

        /** A 70B-class model (80 layers of 0.5 GB, 41 GB in all) over workers of 16 GB: 3 of them per pipeline. */
        public static Settings of(int workers) {
            return new Settings(workers, 80, 512L << 20, 16L << 30, 60_000, 2_000, 5_000, 2_000, 32, 52);
        }
    }

    /** What one run measured. */
    public record Report(int workers, double cpuMsPerSimulatedSecond, long detectionP50Ms, long detectionP99Ms,
                         int detections, double fullPlanMs, double pipelinesPlanMs, int pipelines, double replanMs,
                         double bytesPerMembershipChange, double bytesPerRequest, long simulatedMs) {
    }

    static final long HEARTBEAT_MS = 100;
    static final long MONITOR_MS = 25;
    static final long CONTROL_LOOP_MS = 50;
    static final long DISCOVERY_TTL_MS = 1_000;
    private static final String MODEL = "sim-70b";
    private static final String ROOT = "sim-merkle-root";

    private final Settings settings;
    private final Random random;
    private final ModelFootprint footprint;
    private final PartitionPlanner planner = PlannerKind.OPTIMAL.create();
    private final Reconciler reconciler;
    private final HeartbeatTracker tracker;
    private final LivenessPolicy policy;
    private final SimulatedControlLog log = new SimulatedControlLog();
    private final ThreadMXBean cpu = ManagementFactory.getThreadMXBean();

    private final PriorityQueue<Event> events = new PriorityQueue<>();
    private final Map<String, SimWorker> workers = new LinkedHashMap<>();
    private final Map<String, Attempts> attempts = new HashMap<>();
    private final Map<String, Long> killedAtMs = new HashMap<>();
    private final List<Long> detections = new ArrayList<>();
    private long now;
    private long seq;
    private long cpuNs;
    private boolean modelFetched;
    private int membershipChanges;
    private long requests;
    private int nextWorker;

    public ScaleSimulation(Settings settings) {
        this.settings = settings;
        this.random = new Random(settings.seed());
        this.footprint = footprint(settings);
        int perPipeline = (int) Math.ceil((double) footprint.totalBytes(1) / (settings.workerMemory() - (64L << 20)));
        this.reconciler = new Reconciler(new Reconciler.Settings(MODEL, perPipeline, "sim", "1.0.0",
                PlannerKind.OPTIMAL.configName()), planner);
        DetectorSettings detector = new DetectorSettings(8.0, 4.0, 200, 100, 800, 100, 250); // LivenessProperties' defaults
        this.tracker = new HeartbeatTracker(detector);
        this.policy = new LivenessPolicy(detector, 10_000, 5_000);
    }

    /** The simulated model: {@code layers} layers, an embedding and a head of one layer's bytes each, 64 MB a stage. */
    static ModelFootprint footprint(Settings settings) {
        return new ModelFootprint(filled(settings.layers(), settings.layerBytes()), settings.layerBytes(),
                settings.layerBytes(), 64L << 20);
    }

    /** Runs the bootstrap and then the schedule of kills and joins; returns what was measured. */
    public Report run() {
        for (int i = 0; i < settings.workers(); i++) {
            join();
        }
        at(0, this::monitorTick);
        at(0, this::controlTick);
        runUntil(s -> s.system() == SystemState.READY, 600_000);
        long bootstrapEnd = now;
        long cpuAtBootstrap = cpuNs;
        long bytesAtBootstrap = log.controlBytes();
        for (long t = settings.killEveryMs(), k = 0; t < settings.simulatedMs(); t += settings.killEveryMs(), k++) {
            boolean stage = k % 2 == 0;
            at(now + t, () -> kill(stage));
        }
        for (long t = settings.joinEveryMs(); t < settings.simulatedMs(); t += settings.joinEveryMs()) {
            at(now + t, () -> {
                join();
                membershipChanges++;
            });
        }
        for (long t = 1_000; t < settings.simulatedMs(); t += 1_000) {
            at(now + t, this::recordRequests);
        }
        long end = now + settings.simulatedMs();
        runUntil(s -> false, end);
        double cpuMs = (cpuNs - cpuAtBootstrap) / 1e6;
        long[] d = detections.stream().mapToLong(Long::longValue).sorted().toArray();
        Timings t = timings();
        return new Report(settings.workers(), cpuMs / ((now - bootstrapEnd) / 1000.0), percentile(d, 50),
                percentile(d, 99), d.length, t.fullPlanMs, t.pipelinesPlanMs, t.pipelines, t.replanMs,
                membershipChanges == 0 ? 0 : (double) (log.controlBytes() - bytesAtBootstrap) / membershipChanges,
                requests == 0 ? 0 : (double) log.taskBytes() / requests, now - bootstrapEnd);
    }

    // ---- the workers -------------------------------------------------------------------------------------------

    private void join() {
        String id = String.format(Locale.ROOT, "w%05d", nextWorker++);
        double gflops = 20 + random.nextInt(61); // heterogeneous: 20-80 GFLOP/s
        SimWorker w = new SimWorker(new NodeInfo(id, "worker", "10.0." + (nextWorker / 250) + "." + (nextWorker % 250),
                50051, 8081, 8, settings.workerMemory(), gflops, "cpu", 1), now);
        workers.put(id, w);
        coordinator(() -> tracker.streamOpened(id, w.stream));
        at(now + random.nextInt((int) HEARTBEAT_MS), () -> heartbeat(w));
    }

    private void heartbeat(SimWorker w) {
        if (!w.alive) {
            return;
        }
        w.lastHeartbeatMs = now;
        coordinator(() -> tracker.heartbeat(w.info.nodeId(), now, w.loadedEpoch));
        at(now + HEARTBEAT_MS - 5 + random.nextInt(11), () -> heartbeat(w)); // 100 ms, +-5 ms of jitter
    }

    /** Kills a worker holding a stage, or a spare: its stream closes at once, as a dead process's socket does. */
    private void kill(boolean stage) {
        ClusterState s = log.state();
        List<String> candidates = (stage ? s.pipeline() : s.spares()).stream()
                .filter(id -> workers.get(id).alive && s.nodes().get(id).state() != WorkerState.FAILED).toList();
        if (candidates.isEmpty()) {
            return;
        }
        SimWorker w = workers.get(candidates.get(random.nextInt(candidates.size())));
        w.alive = false;
        w.goneAtMs = now;
        killedAtMs.put(w.info.nodeId(), now);
        membershipChanges++;
        coordinator(() -> tracker.streamClosed(w.info.nodeId(), w.stream, now));
    }

    private void recordRequests() {
        ClusterState s = log.state();
        if (!s.system().acceptsWork()) {
            return;
        }
        int n = settings.requestsPerSec();
        for (int from = 0; from < n; from += 32) { // 32 requests' events to an entry
            List<TaskEvent> entry = new ArrayList<>();
            for (int r = from; r < Math.min(n, from + 32); r++) {
                entry.addAll(request("t" + (requests + r)));
            }
            coordinator(() -> commit(new ClusterCommand.TasksRecorded("coordinator-0", 1, entry, now)));
        }
        requests += n;
    }

    /** The events of one request: 512 prompt tokens, 128 generated, progress every 16 tokens. */
    private List<TaskEvent> request(String taskId) {
        List<Long> prompt = new ArrayList<>();
        for (int i = 0; i < 512; i++) {
            prompt.add((long) random.nextInt(128_000));
        }
        List<TaskEvent> out = new ArrayList<>();
        out.add(new TaskEvent.Started(taskId, prompt.size(), TaskRequest.of(prompt, 128, 0.7, 0.9, 40, 7, 0, false,
                List.of(), null), now));
        List<Long> generated = new ArrayList<>();
        for (int chunk = 0; chunk < 8; chunk++) {
            List<TaskEvent.Token> tokens = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                long id = random.nextInt(128_000);
                tokens.add(new TaskEvent.Token(id, -random.nextDouble(), List.of()));
                generated.add(id);
            }
            out.add(new TaskEvent.Progressed(taskId, chunk * 16, tokens, now));
        }
        out.add(new TaskEvent.Finished(taskId, generated, "length", now));
        return out;
    }

    // ---- the coordinator ---------------------------------------------------------------------------------------

    /** The leader's liveness monitor: the production policy over every node, verdicts committed. */
    private void monitorTick() {
        coordinator(() -> {
            ClusterState s = log.state();
            for (ClusterCommand c : policy.evaluate(s, id -> tracker.observe(id, now), now, 0)) {
                if (commit(c) && c instanceof ClusterCommand.NodeFailed f && killedAtMs.containsKey(f.nodeId())) {
                    detections.add(now - killedAtMs.remove(f.nodeId()));
                }
            }
        });
        at(now + MONITOR_MS, this::monitorTick);
    }

    /** The control loop: the reconciler's commits in order, then its other actions, carried out by the workers. */
    private void controlTick() {
        List<Action> later = new ArrayList<>();
        coordinator(() -> {
            for (int i = 0; i < 20; i++) {
                ClusterState s = log.state();
                List<Action> due = reconciler.next(s, observe());
                Action.Commit commit = (Action.Commit) due.stream().filter(a -> a instanceof Action.Commit)
                        .findFirst().orElse(null);
                if (commit == null) {
                    later.addAll(due);
                    return;
                }
                boolean ok = true;
                for (ClusterCommand c : commit.commands()) {
                    ok &= commit(c);
                }
                done(commit.key(), ok);
            }
        });
        for (Action a : later) {
            perform(a);
        }
        at(now + CONTROL_LOOP_MS, this::controlTick);
    }

    private Observations observe() {
        List<NodeInfo> listed = workers.values().stream()
                .filter(w -> w.alive || now - w.goneAtMs < DISCOVERY_TTL_MS).map(w -> w.info).toList();
        Observations.ModelView model = modelFetched ? new Observations.ModelView(MODEL, ROOT, footprint) : null;
        return new Observations(now, 1, model, listed, attempts);
    }

    /** What a worker (or the registry) does with an action; a dead worker's call fails. */
    private void perform(Action a) {
        if (a instanceof Action.FetchModel) {
            modelFetched = true;
            done(a.key(), true);
        } else if (a instanceof Action.Assign assign) {
            SimWorker w = workers.get(assign.node().nodeId());
            done(a.key(), w.alive);
            if (w.alive) {
                long epoch = log.state().epoch();
                at(now + settings.loadMs(), () -> loaded(w, epoch));
            }
        } else if (a instanceof Action.Validate v) {
            ClusterState s = log.state();
            WeightValidation valid = new WeightValidation(v.epoch(), WeightValidation.Status.VALID, ROOT,
                    "sim-partition-root", s.pipeline(), List.of(), List.of(), now);
            coordinator(() -> done(a.key(), commit(new ClusterCommand.WeightsValidated(valid, now))
                    && commit(new ClusterCommand.Checkpoint(v.epoch(), ROOT, now))));
        } else {
            done(a.key(), true); // a dismissal: the worker leaves
        }
    }

    private void loaded(SimWorker w, long epoch) {
        if (w.alive && log.state().epoch() == epoch) {
            w.loadedEpoch = epoch;
            coordinator(() -> commit(new ClusterCommand.LoadCompleted(w.info.nodeId(), epoch, "sim-checksum",
                    1L << 30, now)));
        }
    }

    private boolean commit(ClusterCommand c) {
        try {
            log.submit(c);
            return true;
        } catch (IllegalTransitionException | IllegalArgumentException e) {
            return false;
        }
    }

    private void done(String key, boolean ok) {
        Attempts a = attempts.getOrDefault(key, Attempts.NONE);
        attempts.put(key, ok ? new Attempts(0, now, now) : new Attempts(a.failures() + 1, now, a.lastSuccessMs()));
    }

    /** Runs coordinator work, its CPU time counted. */
    private void coordinator(Runnable work) {
        long t0 = cpu.getCurrentThreadCpuTime();
        work.run();
        cpuNs += cpu.getCurrentThreadCpuTime() - t0;
    }

    // ---- planning times ----------------------------------------------------------------------------------------

    private record Timings(double fullPlanMs, double pipelinesPlanMs, int pipelines, double replanMs) {
    }

    /**
     * Median thread CPU time of the planners over the whole pool as it ends (a full plan, the pipelines, one
     * re-plan): what a plan costs the coordinator, not inflated by other processes on a loaded machine.
     */
    private Timings timings() {
        ClusterState s = log.state();
        List<WorkerCapacity> pool = workers.values().stream().filter(w -> w.alive)
                .map(w -> new WorkerCapacity(w.info.nodeId(), w.info.throughput(), w.info.memoryBytes())).toList();
        double full = median(() -> planner.plan(footprint, pool));
        int[] k = new int[1];
        MultiPipelinePlanner multi = new MultiPipelinePlanner(planner);
        double pipelines = median(() -> k[0] = multi.plan(footprint, pool, 1, 0).pipelines().size());
        String lost = s.pipeline().get(0);
        List<WorkerCapacity> survivors = pool.stream().filter(w -> !w.nodeId().equals(lost)).toList();
        double replan = median(() -> Replanner.replan(footprint, s.stages(), Set.of(lost), survivors, planner));
        return new Timings(full, pipelines, k[0], replan);
    }

    private double median(Runnable r) {
        double[] ms = new double[7];
        for (int i = 0; i < ms.length; i++) {
            long t0 = cpu.getCurrentThreadCpuTime();
            r.run();
            ms[i] = (cpu.getCurrentThreadCpuTime() - t0) / 1e6;
        }
        Arrays.sort(ms);
        return ms[ms.length / 2];
    }

    // ---- the simulated clock -----------------------------------------------------------------------------------

    private record Event(long atMs, long seq, Runnable run) implements Comparable<Event> {
        @Override
        public int compareTo(Event o) {
            return atMs != o.atMs ? Long.compare(atMs, o.atMs) : Long.compare(seq, o.seq);
        }
    }

    private void at(long atMs, Runnable run) {
        events.add(new Event(atMs, seq++, run));
    }

    private void runUntil(java.util.function.Predicate<ClusterState> done, long untilMs) {
        while (!events.isEmpty() && events.peek().atMs() <= untilMs && !done.test(log.state())) {
            Event e = events.poll();
            now = e.atMs();
            e.run().run();
        }
        if (!done.test(log.state()) && untilMs < Long.MAX_VALUE && untilMs > now) {
            now = untilMs;
        }
    }

    private static final class SimWorker {
        final NodeInfo info;
        final long stream;
        boolean alive = true;
        long goneAtMs;
        long lastHeartbeatMs;
        long loadedEpoch;

        SimWorker(NodeInfo info, long stream) {
            this.info = info;
            this.stream = stream + 1;
        }
    }

    private static long percentile(long[] sorted, int p) {
        if (sorted.length == 0) {
            return -1;
        }
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }

    private static long[] filled(int n, long v) {
        long[] a = new long[n];
        Arrays.fill(a, v);
        return a;
    }

    /**
     * Runs the simulation for each pool size given (default 100, 300 and 1,000) and prints the table; then the
     * aggregate throughput of 1 to {@code N/3} pipelines ({@link ServingSimulation}).
     */
    public static void main(String[] args) {
        List<Integer> sizes = new ArrayList<>();
        long simulatedMs = 60_000;
        for (String a : args) {
            if (a.startsWith("--simulated-seconds=")) {
                simulatedMs = Long.parseLong(a.substring("--simulated-seconds=".length())) * 1000;
            } else {
                for (String n : a.split(",")) {
                    sizes.add(Integer.parseInt(n.trim()));
                }
            }
        }
        if (sizes.isEmpty()) {
            sizes = List.of(100, 300, 1000);
        }
        System.out.println("workers  coord_cpu_ms_per_sim_s  detect_p50_ms  detect_p99_ms  kills  full_plan_ms"
                + "  pipelines_plan_ms  pipelines  replan_ms  log_B_per_membership_change  log_B_per_request");
        for (int n : sizes) {
            Settings s = Settings.of(n);
            Report r = new ScaleSimulation(new Settings(s.workers(), s.layers(), s.layerBytes(), s.workerMemory(),
                    simulatedMs, s.killEveryMs(), s.joinEveryMs(), s.loadMs(), s.requestsPerSec(), s.seed())).run();
            System.out.printf(Locale.ROOT, "%7d  %23.1f  %13d  %13d  %5d  %12.2f  %17.2f  %9d  %9.2f  %27.0f  %17.0f%n",
                    r.workers(), r.cpuMsPerSimulatedSecond(), r.detectionP50Ms(), r.detectionP99Ms(), r.detections(),
                    r.fullPlanMs(), r.pipelinesPlanMs(), r.pipelines(), r.replanMs(), r.bytesPerMembershipChange(),
                    r.bytesPerRequest());
        }
        // Aggregate throughput as pipelines are added: 1, 2, 4 ... 32 pipelines' worth of workers, and each pool's.
        List<Integer> counts = new ArrayList<>(List.of(2, 4, 8, 16, 32));
        sizes.forEach(n -> counts.add(n / 3));
        System.out.println();
        ServingSimulation.print(footprint(Settings.of(3)), counts.stream().distinct().sorted().toList());
        // Pipelines of different speeds: pools of workers of random rates, each pipeline's capacity against the sum.
        List<Integer> pools = new ArrayList<>(List.of(12, 30));
        pools.addAll(sizes);
        System.out.println();
        ServingSimulation.printMixed(footprint(Settings.of(3)), pools.stream().distinct().sorted().toList(), 52);
    }
}
