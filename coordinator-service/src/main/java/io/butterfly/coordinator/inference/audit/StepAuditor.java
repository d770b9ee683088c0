package io.butterfly.coordinator.inference.audit;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.engine.EngineCore;
import io.butterfly.coordinator.inference.engine.Pipeline;
import io.butterfly.coordinator.inference.engine.StepInput;
import io.butterfly.coordinator.inference.engine.StepResult;
import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.reconcile.Assignment;
import io.butterfly.coordinator.reconcile.Workers;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Audits steps by computing them again on another placement (docs/verified-execution.md#audits). For every stage of the
 * serving pipeline a spare is assigned the same layers in the same epoch (outside the plan: it serves no step), forming
 * the <em>audit pipeline</em>; the next spares form the <em>referee pipeline</em>. An audited step of a sequence is
 * sent through the audit pipeline under a shadow sequence id, from the same token ids at the same positions (the
 * positions the shadow's KV cache lacks are fed first, as one prefill chunk: the bits do not depend on chunking), and
 * each stage's output hash is compared with the served one's. The first stage whose hashes differ is disputed: the
 * referee pipeline computes the sequence's history and the step from scratch, and {@link AuditVote} names the worker
 * in the minority, which is evicted ({@link ClusterCommand.NodeByzantine}).
 *
 * <p>With {@code beforeSampling}, the engine takes an audited step's result only once its audit agreed; a step whose
 * audit disagreed, or could not run, fails resumably, so its sequences pause and replay on the next plan instead of
 * sampling from it: no token from an unverified step reaches a client. Otherwise the audit runs off the critical path
 * and a verdict evicts after the fact.
 *
 * <p>With several pipelines (docs/scale-out.md), the pipelines with the same stages' layers share an audit pipeline
 * (and a referee pipeline), spares taken for each such layout in turn; a step is audited on the one of the pipeline
 * that served it (the workers its hashes name), as long as its epoch is that pipeline's steps' epoch. An audit step
 * carries the epoch the spares were assigned in, which is the current one: a pipeline that a re-plan of another left
 * untouched keeps sending steps of an earlier epoch, and they are audited as before.
 *
 * <p>Audits run one at a time, in the order their steps were sent (a chain of futures); the chain's state is touched
 * only inside it, apart from each sequence's token history, which the engine's thread appends under its lock. No
 * audit runs on the transport's threads, which complete the served steps: they only link it into the chain (a short
 * lock of its own), and it runs on the auditor's executor; placing spares (blocking calls to workers) holds no lock an
 * audit or that linking waits on. (A served step's
 * completion once waited on a gRPC event loop for the lock that {@code place()} held through its assign calls: the
 * loop also carried a worker's heartbeats and the calls' own answers, and that worker was declared lost.)
 */
public final class StepAuditor implements EngineCore.StepAudit, AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(StepAuditor.class);
    /** Audit steps are numbered apart from the engine's micro-batches, whose numbers are matched to outcomes. */
    private static final long BATCH_BASE = 1L << 40;
    /** Off the critical path, audits waiting beyond this many are skipped (counted): an auditor never grows a backlog. */
    static final int MAX_PENDING = 64;

    /**
     * @param fraction       of each sequence's steps audited, 0 to 1
     * @param beforeSampling hold an audited step's result until its audit agrees
     * @param key            what the choice of audited steps is keyed with
     */
    public record Settings(double fraction, boolean beforeSampling, long key) {
    }

    /** What the auditor has done, for metrics and tests. */
    public record Counts(long audited, long agreed, long disputed, long evicted, long unavailable, long skipped) {
    }

    /**
     * Where the steps of one serving pipeline are audited: per served stage, its auditor and (if enough spares) its
     * referee. {@code epoch} is the epoch the pipeline's steps carry, {@code assigned} the one the spares were assigned
     * in (the current one), which audit steps carry.
     */
    private record Placement(long epoch, long assigned, List<NodeInfo> served, List<NodeInfo> auditors,
                             Pipeline.Route auditRoute, List<NodeInfo> referees, Pipeline.Route refereeRoute) {

        /** Whether a step of {@code stepEpoch} that the stages {@code servedBy} computed is this pipeline's. */
        boolean serves(long stepEpoch, List<String> servedBy) {
            return epoch == stepEpoch && (servedBy == null
                    || servedBy.equals(served.stream().map(NodeInfo::nodeId).toList()));
        }
    }

    /** The auditors and referees of one layout of stages, shared by the pipelines of that layout. */
    private record Spares(List<NodeInfo> auditors, Pipeline.Route auditRoute, List<NodeInfo> referees,
                          Pipeline.Route refereeRoute) {
    }

    /** A sequence as the audit pipeline holds it: its tokens by position, and its shadow's KV cache. */
    private static final class Shadow {
        long[] tokens = new long[64];
        int length;
        /** False when the auditor met the sequence after its first step: it cannot be audited, not knowing its past. */
        boolean known;
        String id;
        /** The audit pipeline holding the shadow's KV cache. */
        Pipeline.Route route;
        int cached;
    }

    private final Settings settings;
    private final AuditSchedule schedule;
    private final Pipeline pipeline;
    private final Workers workers;
    private final ControlLog control;
    private final ExecutorService calls = Executors.newCachedThreadPool(DaemonThreads.named("step-audit"));
    private final Map<String, Shadow> shadows = new ConcurrentHashMap<>();
    private final AtomicLong batches = new AtomicLong();
    private final AtomicLong generations = new AtomicLong();
    private final AtomicInteger pending = new AtomicInteger();
    private final AtomicLong audited = new AtomicLong();
    private final AtomicLong agreed = new AtomicLong();
    private final AtomicLong disputed = new AtomicLong();
    private final AtomicLong evicted = new AtomicLong();
    /**
     * The workers evicted, each with the epoch of the step that showed it: audits run beside the stream, so several
     * disputes of one fault can end in a verdict, and the fault is one eviction.
     */
    private final Set<String> evictedInEpoch = ConcurrentHashMap.newKeySet();
    private final AtomicLong unavailable = new AtomicLong();
    private final AtomicLong skipped = new AtomicLong();
    /** One per serving pipeline that is audited, in pipeline order. */
    private volatile List<Placement> placements = List.of();
    /** Serializes placements; never held by an audit. */
    private final Object placing = new Object();
    /** Guards {@link #chain}; held only to link the next audit. */
    private final Object chaining = new Object();
    private CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);

    public StepAuditor(Settings settings, Pipeline pipeline, Workers workers, ControlLog control) {
        this.settings = settings;
        this.schedule = new AuditSchedule(settings.fraction(), settings.key());
        this.pipeline = pipeline;
        this.workers = workers;
        this.control = control;
        control.onApplied((before, after, command, index) -> {
            if (after.epoch() != before.epoch() || after.system() != before.system()
                    || !after.pipeline().equals(before.pipeline()) || !after.spares().equals(before.spares())) {
                calls.execute(this::place);
            }
        });
        calls.execute(this::place);
    }

    public Settings settings() {
        return settings;
    }

    public Counts counts() {
        return new Counts(audited.get(), agreed.get(), disputed.get(), evicted.get(), unavailable.get(), skipped.get());
    }

    /**
     * Assigns spares the serving stages' layers for the current epoch: per layout of the pipelines' stages, an audit
     * pipeline, then, spares allowing, a referee pipeline. Too few spares for a layout's audit pipeline: its pipelines
     * are not audited (with {@code beforeSampling}, their audited steps then fail and their sequences wait for one).
     */
    private void place() {
        synchronized (placing) {
            placeNow();
        }
    }

    private void placeNow() {
        ClusterState s = control.state();
        List<List<StageAssignment>> pipelines = s.pipelines();
        if (pipelines.isEmpty() || settings.fraction() == 0) {
            placements = List.of();
            return;
        }
        for (List<StageAssignment> p : pipelines) {
            for (StageAssignment stage : p) {
                if (s.nodes().get(stage.nodeId()) == null) {
                    placements = List.of();
                    return;
                }
            }
        }
        long term = control.raftStatus().term();
        Map<List<List<Object>>, List<StageAssignment>> layouts = new LinkedHashMap<>();
        pipelines.forEach(p -> layouts.putIfAbsent(layout(p), p));
        List<String> spares = s.spares();
        Map<List<List<Object>>, List<NodeInfo>> auditors = new LinkedHashMap<>();
        int used = 0;
        for (Map.Entry<List<List<Object>>, List<StageAssignment>> e : layouts.entrySet()) {
            int k = e.getValue().size();
            if (spares.size() - used < k) {
                log.warn("audits need {} spare worker(s) to hold the {} stage(s) of {} again, {} available: its"
                        + " pipeline(s) are not audited", k, k, e.getKey(), spares.size() - used);
                continue;
            }
            auditors.put(e.getKey(), assign(s, e.getValue(), spares.subList(used, used + k), term));
            used += k;
        }
        Map<List<List<Object>>, Spares> bySpares = new LinkedHashMap<>();
        for (Map.Entry<List<List<Object>>, List<NodeInfo>> e : auditors.entrySet()) {
            List<StageAssignment> stages = layouts.get(e.getKey());
            int k = stages.size();
            List<NodeInfo> referees = spares.size() - used >= k
                    ? assign(s, stages, spares.subList(used, used + k), term) : List.of();
            used += referees.size();
            bySpares.put(e.getKey(), new Spares(e.getValue(), pipeline.route(e.getValue()), referees,
                    referees.isEmpty() ? null : pipeline.route(referees)));
        }
        List<Placement> out = new ArrayList<>();
        for (List<StageAssignment> p : pipelines) {
            Spares sp = bySpares.get(layout(p));
            if (sp != null) {
                List<NodeInfo> served = p.stream().map(stage -> s.nodes().get(stage.nodeId()).info()).toList();
                out.add(new Placement(s.stepsEpoch(p), s.epoch(), served, sp.auditors(), sp.auditRoute(),
                        sp.referees(), sp.refereeRoute()));
            }
        }
        shadows.values().forEach(sh -> sh.id = null); // the new audit pipelines hold none of the old shadows' caches
        placements = List.copyOf(out);
        for (Placement where : out) {
            log.info("audits (fraction {}{}) of epoch {}: stages {} (steps of epoch {}) audited by {}, refereed by {}",
                    settings.fraction(), settings.beforeSampling() ? ", before sampling" : "", s.epoch(),
                    where.served().stream().map(NodeInfo::nodeId).toList(), where.epoch(),
                    where.auditors().stream().map(NodeInfo::nodeId).toList(),
                    where.referees().stream().map(NodeInfo::nodeId).toList());
        }
    }

    /** A pipeline's stages as an audit pipeline must hold them again: each one's layers, embedding and head. */
    private static List<List<Object>> layout(List<StageAssignment> stages) {
        return stages.stream().map(st -> List.<Object>of(st.layerStart(), st.layerEnd(), st.hasEmbedding(),
                st.hasHead())).toList();
    }

    private List<NodeInfo> assign(ClusterState s, List<StageAssignment> stages, List<String> spares, long term) {
        List<NodeInfo> out = new ArrayList<>();
        for (int i = 0; i < stages.size(); i++) {
            StageAssignment stage = stages.get(i);
            NodeInfo spare = s.nodes().get(spares.get(i)).info();
            try {
                workers.assign(spare, new Assignment(s.modelId(), stage.layerStart(), stage.layerEnd(),
                        stage.hasEmbedding(), stage.hasHead(), s.epoch(), term, s.epoch()).forAudit(), Duration.ofSeconds(10));
            } catch (RuntimeException e) {
                log.warn("assigning {} to audit layers [{}, {}) failed: {}", spare.nodeId(), stage.layerStart(),
                        stage.layerEnd(), e.toString());
            }
            out.add(spare);
        }
        return out;
    }

    @Override
    public CompletableFuture<StepResult> sent(StepInput input, CompletableFuture<StepResult> served) {
        List<Audited> chosen = new ArrayList<>();
        int at = 0;
        for (int i = 0; i < input.sequences().size(); i++) {
            StepInput.Slice slice = input.sequences().get(i);
            Shadow sh = record(slice, input.tokens(), at);
            at += slice.numTokens();
            if (sh.known && schedule.audits(slice.sequenceId(), slice.position())) {
                synchronized (sh) {
                    chosen.add(new Audited(slice, Arrays.copyOf(sh.tokens, slice.position() + slice.numTokens()), i));
                }
            }
        }
        List<Placement> where = placements;
        if (chosen.isEmpty() || settings.fraction() == 0) {
            return served;
        }
        if (where.stream().noneMatch(p -> p.serves(input.epoch(), null))) {
            unavailable.incrementAndGet();
            return settings.beforeSampling() ? served.thenCompose(r -> CompletableFuture.failedFuture(unavailable(
                    "no audit pipeline serves epoch " + input.epoch() + " yet"))) : served;
        }
        if (!settings.beforeSampling()) {
            if (pending.get() >= MAX_PENDING) {
                skipped.incrementAndGet();
                return served;
            }
            pending.incrementAndGet();
            served.whenComplete((r, failed) -> {
                if (failed != null) {
                    pending.decrementAndGet(); // the step failed: nothing to audit
                } else {
                    auditOn(where, input, r, chosen).whenComplete((v, e) -> pending.decrementAndGet());
                }
            });
            return served;
        }
        return served.thenCompose(r -> auditOn(where, input, r, chosen).thenApply(v -> r));
    }

    /** Audits the step on the audit pipeline of the pipeline that served it (the workers its hashes name). */
    private CompletableFuture<Void> auditOn(List<Placement> where, StepInput input, StepResult served,
                                            List<Audited> chosen) {
        List<Placement> ofEpoch = where.stream().filter(p -> p.serves(input.epoch(), null)).toList();
        List<String> servedBy = served.hashes().stream().map(StepResult.StageHashes::nodeId).toList();
        Placement mine = ofEpoch.size() == 1 ? ofEpoch.get(0)
                : ofEpoch.stream().filter(p -> p.serves(input.epoch(), servedBy)).findFirst().orElse(null);
        if (mine == null) {
            unavailable.incrementAndGet();
            return CompletableFuture.failedFuture(unavailable("no audit pipeline for the step of epoch "
                    + input.epoch() + " that " + servedBy + " computed"));
        }
        return enqueue(mine, input, served, chosen);
    }

    /** A slice chosen for audit and its sequence's tokens up to the slice's end. */
    private record Audited(StepInput.Slice slice, long[] history, int index) {
    }

    /** Appends the slice's tokens to its sequence's history (a replay from an earlier position cuts it there first). */
    private Shadow record(StepInput.Slice slice, long[] tokens, int at) {
        Shadow sh = shadows.computeIfAbsent(slice.sequenceId(), id -> {
            Shadow fresh = new Shadow();
            fresh.known = slice.position() == 0;
            return fresh;
        });
        synchronized (sh) {
            if (slice.position() > sh.length) {
                sh.known = false;
                return sh;
            }
            int end = slice.position() + slice.numTokens();
            if (end > sh.tokens.length) {
                sh.tokens = Arrays.copyOf(sh.tokens, Math.max(end, sh.tokens.length * 2));
            }
            System.arraycopy(tokens, at, sh.tokens, slice.position(), slice.numTokens());
            sh.length = end;
            if (slice.position() == 0) {
                sh.known = true;
            }
            return sh;
        }
    }

    private CompletableFuture<Void> enqueue(Placement where, StepInput input, StepResult served,
                                            List<Audited> chosen) {
        synchronized (chaining) {
            CompletableFuture<Void> next = chain.handle((v, e) -> null)
                    .thenComposeAsync(v -> audit(where, input, served, chosen), calls);
            chain = next.handle((v, e) -> null);
            return next;
        }
    }

    /** Computes the chosen slices on the audit pipeline and compares; completes exceptionally when the step is wrong. */
    private CompletableFuture<Void> audit(Placement where, StepInput input, StepResult served, List<Audited> chosen) {
        audited.addAndGet(chosen.size());
        List<StepInput.Slice> catchUp = new ArrayList<>();
        List<long[]> catchUpTokens = new ArrayList<>();
        List<StepInput.Slice> step = new ArrayList<>();
        List<long[]> stepTokens = new ArrayList<>();
        for (Audited a : chosen) {
            Shadow sh = shadows.get(a.slice().sequenceId());
            StepInput.Slice s = a.slice();
            if (sh.id == null || sh.cached > s.position() || !Objects.equals(sh.route, where.auditRoute())) {
                if (sh.id != null) {
                    String old = sh.id;
                    Pipeline.Route holder = sh.route;
                    calls.execute(() -> pipeline.release(holder, List.of(old)));
                }
                sh.id = "audit-" + generations.incrementAndGet() + "-" + s.sequenceId();
                sh.route = where.auditRoute();
                sh.cached = 0;
            }
            if (sh.cached < s.position()) {
                catchUp.add(new StepInput.Slice(sh.id, sh.cached, s.position() - sh.cached, s.reservePositions(),
                        Map.of(), true, -1));
                catchUpTokens.add(Arrays.copyOfRange(a.history(), sh.cached, s.position()));
            }
            step.add(new StepInput.Slice(sh.id, s.position(), s.numTokens(), s.reservePositions(), Map.of(),
                    s.skipLogits(), s.greedyAlternatives()));
            stepTokens.add(Arrays.copyOfRange(a.history(), s.position(), s.position() + s.numTokens()));
        }
        CompletableFuture<StepResult> first = catchUp.isEmpty() ? CompletableFuture.completedFuture(null)
                : pipeline.submit(where.auditRoute(), input(where.assigned(), catchUp, catchUpTokens));
        return first.thenComposeAsync(v -> pipeline.submit(where.auditRoute(), input(where.assigned(), step, stepTokens)),
                        calls)
                .handleAsync((auditResult, failure) -> {
                    if (failure != null) {
                        chosen.forEach(a -> shadows.get(a.slice().sequenceId()).id = null);
                        unavailable.incrementAndGet();
                        throw unavailable("the audit pipeline did not compute the step: " + rootMessage(failure));
                    }
                    for (Audited a : chosen) {
                        shadows.get(a.slice().sequenceId()).cached = a.slice().position() + a.slice().numTokens();
                    }
                    return auditResult;
                }, calls)
                .thenCompose(auditResult -> compare(where, input, served, chosen, auditResult));
    }

    private CompletableFuture<Void> compare(Placement where, StepInput input, StepResult served, List<Audited> chosen,
                                            StepResult auditResult) {
        List<StepResult.StageHashes> mine = served.hashes();
        List<StepResult.StageHashes> theirs = auditResult.hashes();
        if (mine.size() != where.served().size() || theirs.size() != where.auditors().size()) {
            unavailable.incrementAndGet();
            return CompletableFuture.failedFuture(unavailable("a pipeline reported no hashes for the step"));
        }
        for (int stage = 0; stage < mine.size(); stage++) {
            AuditVote.Computation servedBy = computation(mine.get(stage), chosen, true);
            AuditVote.Computation auditedBy = computation(theirs.get(stage), chosen, false);
            if (AuditVote.compare(servedBy, auditedBy) instanceof AuditVote.Disputed) {
                disputed.incrementAndGet();
                return referee(where, input, chosen, stage, servedBy, auditedBy);
            }
        }
        agreed.incrementAndGet();
        return CompletableFuture.completedFuture(null);
    }

    /** Per audited sequence (by its served id), the stage's output hash. */
    private static AuditVote.Computation computation(StepResult.StageHashes h, List<Audited> chosen, boolean served) {
        Map<String, Long> hashes = new LinkedHashMap<>();
        for (int i = 0; i < chosen.size(); i++) {
            int at = served ? chosen.get(i).index() : i;
            hashes.put(chosen.get(i).slice().sequenceId(), at < h.outputHashes().length ? h.outputHashes()[at] : 0L);
        }
        return new AuditVote.Computation(h.nodeId(), hashes);
    }

    /**
     * A third computation of the disputed sequences, from their first token, on the referee pipeline; the minority
     * is evicted. Completes exceptionally unless the served computation is the one that stands.
     */
    private CompletableFuture<Void> referee(Placement where, StepInput input, List<Audited> chosen, int stage,
                                            AuditVote.Computation servedBy, AuditVote.Computation auditedBy) {
        String step = "step at position " + chosen.get(0).slice().position() + " of "
                + chosen.stream().map(a -> a.slice().sequenceId()).toList() + ", stage " + stage + " (epoch "
                + input.epoch() + ")";
        if (where.refereeRoute() == null) {
            log.warn("audit disputed, no referee pipeline (too few spares): {}; {} against {}", step,
                    servedBy.describe(), auditedBy.describe());
            return CompletableFuture.failedFuture(unavailable("audit disputed and no referee: " + step));
        }
        long generation = generations.incrementAndGet();
        List<StepInput.Slice> history = new ArrayList<>();
        List<long[]> historyTokens = new ArrayList<>();
        List<StepInput.Slice> last = new ArrayList<>();
        List<long[]> lastTokens = new ArrayList<>();
        List<String> ids = new ArrayList<>();
        for (Audited a : chosen) {
            StepInput.Slice s = a.slice();
            String id = "referee-" + generation + "-" + s.sequenceId();
            ids.add(id);
            if (s.position() > 0) {
                history.add(new StepInput.Slice(id, 0, s.position(), s.reservePositions(), Map.of(), true, -1));
                historyTokens.add(Arrays.copyOfRange(a.history(), 0, s.position()));
            }
            last.add(new StepInput.Slice(id, s.position(), s.numTokens(), s.reservePositions(), Map.of(),
                    s.skipLogits(), s.greedyAlternatives()));
            lastTokens.add(Arrays.copyOfRange(a.history(), s.position(), s.position() + s.numTokens()));
        }
        CompletableFuture<StepResult> first = history.isEmpty() ? CompletableFuture.completedFuture(null)
                : pipeline.submit(where.refereeRoute(), input(where.assigned(), history, historyTokens));
        return first.thenComposeAsync(v -> pipeline.submit(where.refereeRoute(), input(where.assigned(), last,
                        lastTokens)), calls)
                .handleAsync((r, failure) -> {
                    calls.execute(() -> pipeline.release(where.refereeRoute(), ids));
                    if (failure != null || r.hashes().size() <= stage) {
                        throw unavailable("the referee did not compute " + step + ": "
                                + (failure == null ? "no hashes" : rootMessage(failure)));
                    }
                    AuditVote.Computation refereedBy = computation(r.hashes().get(stage), chosen, false);
                    AuditVote.Verdict verdict = AuditVote.decide(servedBy, auditedBy, refereedBy, step);
                    if (verdict instanceof AuditVote.Minority m) {
                        evict(m, input.epoch());
                        if (m.nodeId().equals(servedBy.nodeId())) {
                            throw new ButterflyException(ErrorCode.CHECKSUM_MISMATCH, ErrorKind.UNAVAILABLE,
                                    "an audit found " + m.nodeId() + " computed wrong (" + step
                                            + "): its sequences replay without it");
                        }
                        return null; // the auditor was wrong: the served step stands
                    }
                    log.warn("audit undecided: {}", ((AuditVote.Undecided) verdict).cause());
                    throw unavailable("audit undecided: " + step);
                }, calls);
    }

    private void evict(AuditVote.Minority m, long epoch) {
        if (!evictedInEpoch.add(m.nodeId() + "@" + epoch)) {
            log.info("Byzantine again, already evicted for epoch {}: {}", epoch, m.cause());
            return;
        }
        evicted.incrementAndGet();
        log.warn("Byzantine: {}", m.cause());
        calls.execute(() -> {
            try {
                control.submit(new ClusterCommand.NodeByzantine(m.nodeId(), m.cause(), System.currentTimeMillis()));
            } catch (RuntimeException e) {
                log.warn("committing {} Byzantine failed: {}", m.nodeId(), e.toString());
            }
        });
    }

    private StepInput input(long epoch, List<StepInput.Slice> slices, List<long[]> tokens) {
        long[] all = new long[tokens.stream().mapToInt(t -> t.length).sum()];
        int at = 0;
        for (long[] t : tokens) {
            System.arraycopy(t, 0, all, at, t.length);
            at += t.length;
        }
        return new StepInput(BATCH_BASE + batches.incrementAndGet(), epoch, slices, all);
    }

    @Override
    public void released(List<String> ids) {
        Map<Pipeline.Route, List<String>> gone = new LinkedHashMap<>();
        for (String id : ids) {
            Shadow sh = shadows.remove(id);
            if (sh != null && sh.id != null && sh.route != null) {
                gone.computeIfAbsent(sh.route, r -> new ArrayList<>()).add(sh.id);
            }
        }
        gone.forEach((route, shadowIds) -> calls.execute(() -> pipeline.release(route, shadowIds)));
    }

    private static ButterflyException unavailable(String why) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE, why);
    }

    private static String rootMessage(Throwable t) {
        while (t.getCause() != null && t != t.getCause()) {
            t = t.getCause();
        }
        return t.getMessage();
    }

    @Override
    public void close() {
        calls.shutdownNow();
    }
}
