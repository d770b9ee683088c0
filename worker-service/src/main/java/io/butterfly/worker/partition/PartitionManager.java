package io.butterfly.worker.partition;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.common.hash.MerkleTree;
import io.butterfly.common.manifest.Manifest;
import io.butterfly.common.manifest.ManifestFile;
import io.butterfly.common.manifest.ManifestVerifier;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.text.ByteSize;
import io.butterfly.common.manifest.VerifiedFile;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.common.tensor.SliceTree;
import io.butterfly.worker.engine.DjlPartitionExecutor;
import io.butterfly.worker.engine.HeadParallelStage;
import io.butterfly.worker.engine.HeadPlacement;
import io.butterfly.worker.engine.HeadShardPartition;
import io.butterfly.worker.engine.RemoteHeads;
import io.butterfly.worker.engine.PartitionExecutor;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.engine.StageInput;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.Set;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Owns this worker's partition: accepts assignments (fenced by epoch), fetches exactly the shards
 * the layer range needs, verifies them, loads them into the engine, warms up and reports each phase.
 * What to do is {@link PartitionPlan}'s to decide (what an assignment calls for, then each step of a load); this
 * class is the one runner that carries the steps out and owns the state they change.
 */
public class PartitionManager {

    private static final Logger log = LoggerFactory.getLogger(PartitionManager.class);
    /**
     * How often download progress goes to the coordinator. Each report is a command in the replicated control
     * log: at 4 per second per worker the coordinator spent a core's quarter committing them during a cold
     * start; once a second still moves a progress bar smoothly.
     */
    private static final long PROGRESS_REPORT_NANOS = 1_000_000_000L;

    private final PartitionSettings settings;
    private final ShardSource registry;
    private final Coordinators coordinator;
    private final ManifestVerifier verifier;
    /** Executors replaced by a newer assignment, closed by the next load task (guarded by this). */
    private final List<PartitionExecutor> replaced = new ArrayList<>();
    private final ExecutorService loader = Executors.newSingleThreadExecutor(DaemonThreads.named("partition-loader"));
    private volatile PartitionStatus status = PartitionStatus.unassigned();
    private volatile PartitionExecutor executor;
    /**
     * The first epoch whose steps the partition runs (up to its epoch): the epoch its pipeline has been the same
     * since, as far as its caches go back ({@link PartitionPlan#stepsFrom}). Written before the status and the
     * executor change, so a step checked against it never runs on an executor of another stage.
     */
    private volatile long stepsFromEpoch;
    private volatile RemoteHeads remoteHeads;
    private volatile LoadedPartition loaded;
    private volatile long loadStartedNanos;
    private long highestEpoch;
    private long highestTerm;
    private Assignment current;
    /**
     * Bumped by every assignment that starts a new load (guarded by this). A load carries the generation it
     * started with: once superseded it is cancelled and never writes the status, reports or publishes its
     * partition, so a late epoch-1 result cannot pass for epoch 2's.
     */
    private long generation;
    private Future<?> running;

    public PartitionManager(PartitionSettings settings, ShardSource registry, Coordinators coordinator) {
        this.verifier = new ManifestVerifier(settings.trustedPublisherKeys());
        this.settings = settings;
        this.registry = registry;
        this.coordinator = coordinator;
    }

    public PartitionSettings settings() {
        return settings;
    }

    /**
     * Accepts an assignment and loads it in the background. Fencing: an assignment from an older coordinator
     * Raft term (a deposed leader) or an older epoch is refused.
     */
    public synchronized void assign(Assignment request) {
        fence("assignment", request.epoch(), request.term());
        if (request.modelId().isBlank()) {
            throw new IllegalArgumentException("model_id is required");
        }
        int start = request.layerStart();
        int end = request.layerEnd();
        if (start < 0 || end <= start) {
            throw new IllegalArgumentException("layers must be a non-empty range [start, end), got [" + start + ", " + end + ")");
        }
        request.registry().requireValid("registry");
        request.coordinator().requireValid("coordinator");
        List<Endpoint> replicas = request.coordinatorReplicas();
        for (int i = 0; i < replicas.size(); i++) {
            replicas.get(i).requireValid("coordinator_replicas[" + i + "]");
        }
        PartitionPlan.Step step = PartitionPlan.next(request,
                new PartitionPlan.Held(current, status.phase(), status.epoch(), executor != null));
        if (step instanceof PartitionPlan.HoldOn holdOn) {
            holdOn(request, replicas, holdOn.keepCaches());
            return;
        }
        if (step instanceof PartitionPlan.Keep keep) {
            // A retry, or a newly elected coordinator leader re-announcing it: report to the coordinator it names
            // from now on.
            highestTerm = request.term();
            current = request;
            coordinator.attach(request.coordinator(), replicas, request.epoch());
            if (keep.reportReady()) {
                // Said again: the coordinator asks because its state lacks it (e.g. the first report was
                // refused while it held this node FAILED), and would otherwise wait for ever.
                tell(request, readyReport(status, executor));
            }
            return;
        }
        highestEpoch = request.epoch();
        highestTerm = request.term();
        current = request;
        coordinator.attach(request.coordinator(), replicas, request.epoch());
        coordinator.partitionReady(0); // nothing of the new assignment is loaded yet
        stepsFromEpoch = request.epoch();
        status = PartitionStatus.loading(request);
        long loadGeneration = ++generation;
        if (running != null) {
            running.cancel(true); // a superseded download stops at its next chunk instead of running to the end
        }
        // The replaced partition can run no step any more (the phase is not READY): its weights and KV caches
        // are freed now, not when the new load publishes, which it may never do. Closed on the loader thread:
        // close waits for a step still running on it, and the assignment call must not.
        // Queued rather than captured by the task: a task cancelled before it starts (a third assignment right
        // behind) would otherwise never close it.
        if (executor != null) {
            replaced.add(executor);
            executor = null;
        }
        running = loader.submit(() -> load(request, loadGeneration));
    }

    /** Refuses what comes from a deposed leader (an older Raft term) or of an older epoch. */
    private void fence(String what, long epoch, long term) {
        if (term < highestTerm) {
            throw new ButterflyException(ErrorCode.STALE_TERM, ErrorKind.FAILED_PRECONDITION,
                    what + " from coordinator term " + term + " is older than term " + highestTerm + " already seen");
        }
        if (epoch < highestEpoch) {
            throw new ButterflyException(ErrorCode.STALE_TERM, ErrorKind.FAILED_PRECONDITION,
                    what + " epoch " + epoch + " is older than epoch " + highestEpoch + " already seen");
        }
    }

    /**
     * Holds the loaded stage on in the new epoch: steps of the new epoch run on it from now on, and those of older
     * epochs only back to the one its whole pipeline has been the same since (docs/scale-out.md). Every sequence's KV cache is kept if the stage was held without a break since the epoch it was loaded
     * or last kept in; otherwise (this worker was out of the plan in between, its sequences ran elsewhere) the
     * caches are dropped and the weights kept.
     */
    private void holdOn(Assignment request, List<Endpoint> replicas, boolean keepCaches) {
        stepsFromEpoch = PartitionPlan.stepsFrom(request, stepsFromEpoch, keepCaches);
        int cached = executor.cachedSequences();
        if (!keepCaches) {
            executor.evictIdle(-1);
        }
        long from = status.epoch();
        highestEpoch = request.epoch();
        highestTerm = request.term();
        current = request;
        loaded = new LoadedPartition(request, loaded.files(), loaded.verified());
        status = status.inEpoch(request.epoch());
        coordinator.attach(request.coordinator(), replicas, request.epoch());
        coordinator.partitionReady(request.epoch());
        log.info("partition {} layers [{}, {}) held on from epoch {} into epoch {} without loading; {} KV cache(s) {}",
                request.modelId(), request.layerStart(), request.layerEnd(), from, request.epoch(), cached,
                keepCaches ? "kept" : "dropped (the stage was not held since epoch " + request.keptSinceEpoch() + ")");
        tell(request, readyReport(status, executor));
    }

    /** The first epoch whose steps the partition runs; it runs those of every epoch from it up to its own. */
    public long stepsFromEpoch() {
        return stepsFromEpoch;
    }

    /**
     * Leaves the cluster's plan for good (a drain): the partition and its caches are freed and nothing older than
     * {@code epoch} and {@code term} is accepted any more.
     */
    public synchronized void dismiss(long epoch, long term) {
        fence("dismissal", epoch, term);
        highestEpoch = epoch;
        highestTerm = term;
        current = null;
        loaded = null;
        generation++;
        if (running != null) {
            running.cancel(true);
        }
        if (executor != null) {
            replaced.add(executor);
            executor = null;
        }
        status = PartitionStatus.unassigned();
        coordinator.partitionReady(0);
        running = loader.submit(this::closeReplaced);
    }

    /** Closes the executors replaced by newer assignments (outside the lock: close waits for a running step). */
    private void closeReplaced() {
        List<PartitionExecutor> due;
        synchronized (this) {
            due = new ArrayList<>(replaced);
            replaced.clear();
        }
        due.forEach(PartitionExecutor::close);
    }

    /**
     * Runs one load: each step {@link PartitionPlan#nextLoadStep} names, against how far the load has got, until none
     * is left. A failure ends it FAILED (reported), closing an engine stage it loaded and never published.
     */
    private void load(Assignment request, long gen) {
        LoadRun run = new LoadRun(request, gen);
        loadStartedNanos = run.started;
        try {
            try {
                for (PartitionPlan.LoadStep step; (step = PartitionPlan.nextLoadStep(run.progress())) != null; ) {
                    run.carryOut(step);
                }
            } catch (Throwable e) {
                run.closeUnpublished(); // not published: nothing else holds its native memory
                throw e;
            }
        } catch (ButterflyException e) {
            fail(request, gen, e.code(), e.getMessage());
        } catch (IllegalArgumentException e) {
            fail(request, gen, ErrorCode.INVALID_MANIFEST, e.getMessage());
        } catch (Throwable e) { // an Error from the engine (e.g. out of memory) must still end in FAILED
            if (isCurrent(gen)) {
                log.error("partition load failed", e);
            }
            // Out of memory is a capacity problem, not a glitch: the coordinator leaves it to an operator rather
            // than load the partition again every minute.
            ErrorCode code = e instanceof OutOfMemoryError ? ErrorCode.INSUFFICIENT_MEMORY : ErrorCode.INTERNAL_ERROR;
            fail(request, gen, code, e.getClass().getSimpleName() + ": " + e.getMessage());
        } finally {
            // Files verified in place whose load never began (superseded, a bad config) still hold a channel.
            run.verified.forEach(VerifiedFile::closeChannel);
        }
    }

    /** One load's steps and what each leaves for the next (the load thread's only). */
    private final class LoadRun {
        final Assignment request;
        final long gen;
        final long started = System.nanoTime();
        final Set<PartitionPlan.LoadStep> done = EnumSet.noneOf(PartitionPlan.LoadStep.class);
        boolean superseded;
        ShardSource.Fetch fetch;
        Manifest manifest;
        List<ManifestFile> files;
        Path dir;
        List<VerifiedFile> verified = List.of();
        long downloadedNanos;
        String checksum;
        PartitionSpec spec;
        /** The stage's head shards when its dense layers are split by heads, else null. */
        HeadPlacement heads;
        /** The engine stage it loaded, until published or closed. */
        PartitionExecutor engine;
        long engineLoadedNanos;
        double warmupMs;
        long loadMs;
        PartitionStatus ready;
        PartitionExecutor published;

        LoadRun(Assignment request, long gen) {
            this.request = request;
            this.gen = gen;
        }

        PartitionPlan.LoadProgress progress() {
            boolean toRelease;
            synchronized (PartitionManager.this) {
                superseded |= gen != generation;
                toRelease = !replaced.isEmpty();
            }
            return new PartitionPlan.LoadProgress(done, toRelease, superseded, engine != null);
        }

        void carryOut(PartitionPlan.LoadStep step) throws IOException {
            switch (step) {
                case RELEASE -> closeReplaced();
                case FETCH -> fetch();
                case VERIFY -> verify();
                case LOAD -> {
                    if (heads == null) {
                        engine = DjlPartitionExecutor.loadOpened(spec, openWeights(verified), settings.executor());
                    } else if (heads.shardOnly()) {
                        engine = HeadShardPartition.load(spec, heads, openWeights(verified), settings.executor());
                    } else {
                        // Three loads (embedding, own shard, head) each close their files, so the verified channels
                        // serve the first and the others open the same verified files by path.
                        boolean[] first = {true};
                        engine = HeadParallelStage.load(spec, heads, () -> {
                            List<VerifiedFile> files = first[0] ? verified : verified.stream()
                                    .map(v -> new VerifiedFile(v.path(), v.sha256(), v.sizeBytes())).toList();
                            first[0] = false;
                            return openWeights(files);
                        }, settings.executor(), remoteHeads);
                    }
                    engineLoadedNanos = System.nanoTime();
                }
                case WARM -> {
                    if (!transition(request, gen, LoadPhase.LOADED) || !transition(request, gen, LoadPhase.WARMING)) {
                        superseded = true;
                        return;
                    }
                    // A head shard runs no sequence, and a head-parallel stage would ask shards that may not be loaded.
                    warmupMs = heads != null ? 0 : warmUp(engine, spec);
                }
                case PUBLISH -> publish();
                case REPORT -> report();
                case ABANDON -> closeUnpublished();
            }
            done.add(step);
        }

        private void fetch() throws IOException {
            fetch = registry.from(request.registry());
            manifest = verifier.verifyFor(request.modelId(), fetch.manifest(request.modelId()));
            files = ShardSelection.select(manifest, request.layerStart(), request.layerEnd(), request.hasEmbedding(),
                    request.hasHead());
            dir = settings.dataDir().resolve("models").resolve(manifest.modelId());
            long[] lastReport = {0};
            verified = fetch.download(manifest, files.stream().map(ManifestFile::name).toList(), dir,
                    (file, bytesDone, total) -> {
                        // over all files of the partition
                        PartitionStatus s = update(gen, st -> st.withProgress(file, bytesDone, total));
                        long now = System.nanoTime();
                        if (s != null && now - lastReport[0] > PROGRESS_REPORT_NANOS) {
                            lastReport[0] = now;
                            PartitionManager.this.report(request, s, LoadPhase.DOWNLOADING);
                        }
                    });
            downloadedNanos = System.nanoTime();
        }

        private void verify() throws IOException {
            if (!transition(request, gen, LoadPhase.VALIDATING)) {
                superseded = true;
                return;
            }
            // The downloader verified every file against the manifest; the partition checksum binds them.
            checksum = MerkleTree.rootHex(files.stream().map(ManifestFile::checksum).toList());
            ModelConfig config = ModelConfig.read(dir.resolve("config.json"));
            // A dense model's groups are head shards (docs/sharding.md, "Head parallelism").
            heads = config.experts() == null ? request.headPlacement() : null;
            spec = new PartitionSpec(config, request.layerStart(), request.layerEnd(), request.hasEmbedding(),
                    request.hasHead(), heads != null ? null
                    : request.expertPlacement(config.experts() == null ? 0 : config.experts().experts()));
            if (spec.layerEnd() > config.numLayers()) {
                throw new IllegalArgumentException("layers [" + spec.layerStart() + ", " + spec.layerEnd()
                        + ") exceed the model's " + config.numLayers() + " layers");
            }
        }

        /** Makes the loaded stage the one that serves, unless a newer assignment took over meanwhile. */
        private void publish() {
            loadMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
            PartitionExecutor previous;
            synchronized (PartitionManager.this) {
                if (gen != generation) {
                    superseded = true;
                    return;
                }
                previous = executor;
                executor = engine;
                loaded = new LoadedPartition(request, files, verified);
                ready = status.ready(checksum, loadMs, warmupMs);
                status = ready;
            }
            published = engine;
            engine = null; // the manager's now
            if (previous != null) {
                previous.close();
            }
        }

        private void report() {
            coordinator.partitionReady(request.epoch());
            log.info("partition {} layers [{}, {}) ready in {} ms (fetch+verify {} ms: {} streamed, {} verified in the shared store;"
                            + " engine load {} ms, warm-up {} ms), checksum {}", manifest.modelId(), spec.layerStart(),
                    spec.layerEnd(), loadMs, TimeUnit.NANOSECONDS.toMillis(downloadedNanos - started),
                    ByteSize.human(fetch.bytesStreamed()), ByteSize.human(fetch.bytesVerifiedInPlace()),
                    TimeUnit.NANOSECONDS.toMillis(engineLoadedNanos - downloadedNanos), String.format("%.1f", warmupMs),
                    checksum);
            tell(request, readyReport(ready, published));
        }

        void closeUnpublished() {
            if (engine != null) {
                engine.close();
                engine = null;
            }
        }
    }

    /**
     * The weight files to load, each opened through the channel it was verified through where it was verified in
     * place (the registry's shared store), else by its path in the download directory.
     */
    private static List<SafetensorsFile> openWeights(List<VerifiedFile> verified) throws IOException {
        List<SafetensorsFile> opened = new ArrayList<>();
        try {
            for (VerifiedFile v : verified) {
                if (v.path().getFileName().toString().endsWith(".safetensors")) {
                    opened.add(v.channel() != null ? SafetensorsFile.open(v.path(), v.channel()) : SafetensorsFile.open(v.path()));
                }
            }
            return opened;
        } catch (IOException | RuntimeException e) {
            SafetensorsFile.closeAll(opened, e);
            throw e;
        }
    }

    /** Applies {@code change} to the status if load {@code gen} is still the current one; the new status, else null. */
    private synchronized PartitionStatus update(long gen, UnaryOperator<PartitionStatus> change) {
        if (gen != generation) {
            return null;
        }
        status = change.apply(status);
        return status;
    }

    private synchronized boolean isCurrent(long gen) {
        return gen == generation;
    }

    /** Runs a short sequence through the partition so kernels and allocators are warm before READY. */
    private static double warmUp(PartitionExecutor exec, PartitionSpec spec) {
        if (spec.spreadsExperts()) {
            // An expert group runs no sequence, and a stage's worker would ask groups that may not be loaded yet.
            return 0;
        }
        long t0 = System.nanoTime();
        String seq = "warmup";
        int n = 4;
        StageInput input;
        if (spec.hasEmbedding()) {
            input = new StageInput.Tokens(new long[]{0, 1, 2, 3});
        } else {
            ByteBuffer zeros = ByteBuffer.allocate(n * spec.config().hiddenSize() * 4).order(ByteOrder.LITTLE_ENDIAN);
            input = new StageInput.Hidden(zeros);
        }
        exec.forward(List.of(new SequenceChunk(seq, 0, n)), input);
        exec.release(seq);
        return (System.nanoTime() - t0) / 1e6;
    }

    /** LoadComplete (docs/bootstrap-protocol.md §6.4) of a READY partition, with this worker's KV-cache budget. */
    private LoadReport readyReport(PartitionStatus s, PartitionExecutor loaded) {
        return LoadReport.ready(s, loaded instanceof DjlPartitionExecutor || loaded instanceof HeadParallelStage
                        || loaded instanceof HeadShardPartition ? loaded.weightBytes() : s.bytesTotal(),
                settings.executor().kvCacheBytes());
    }

    /** Moves load {@code gen} to {@code phase} and reports it; false (nothing done) if it was superseded. */
    private boolean transition(Assignment request, long gen, LoadPhase phase) {
        PartitionStatus s = update(gen, st -> st.withPhase(phase));
        if (s == null) {
            return false;
        }
        report(request, s, phase);
        return true;
    }

    /**
     * Reports load progress of {@code request} to the coordinator, except for an audit assignment: a spare's copy of a
     * serving stage is outside the plan, and the control log would refuse each of its reports after committing it.
     * Asked of the assignment the report is about, not of the latest: a load's last report can come after the next
     * assignment has arrived.
     */
    private void tell(Assignment request, LoadReport report) {
        if (!request.audit()) {
            coordinator.report(report);
        }
    }

    private void report(Assignment request, PartitionStatus s, LoadPhase phase) {
        tell(request, LoadReport.progress(s, phase,
                LoadEta.seconds(s.bytesDone(), s.bytesTotal(), System.nanoTime() - loadStartedNanos)));
    }

    private void fail(Assignment request, long gen, ErrorCode code, String message) {
        if (update(gen, st -> st.failed(code + ": " + message)) == null) {
            log.info("superseded load of epoch {} ended: {}: {}", request.epoch(), code, message);
            return;
        }
        log.error("partition load failed: {}: {}", code, message);
        tell(request, LoadReport.failed(request, code, message));
    }

    public PartitionStatus status() {
        return status;
    }

    /**
     * This worker's expert group's sum for another worker's step (docs/sharding.md): refused when it holds no expert
     * group, or not the experts {@code [first, end)} the asking stage believes it does.
     */
    public float[] expertGroup(int layer, int first, int end, int rows, float[] hidden, long[] chosen, float[] weights) {
        if (!(executor instanceof DjlPartitionExecutor group) || !group.holdsExpertsOnly()) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION,
                    "this worker holds no loaded expert group (" + status.phase() + ")");
        }
        io.butterfly.worker.engine.ExpertPlacement.Group own = group.spec().experts().own();
        if (own.first() != first || own.end() != end) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION, "this worker holds"
                    + " experts [" + own.first() + ", " + own.end() + "), not [" + first + ", " + end + ")");
        }
        try {
            return group.expertGroup(layer, rows, hidden, chosen, weights);
        } catch (IllegalArgumentException e) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT, e.getMessage());
        }
    }

    /** How a head-parallel stage loaded here asks its other shards (WorkerService.Heads); set once at start. */
    public void askHeadsThrough(RemoteHeads remote) {
        this.remoteHeads = remote;
    }

    /**
     * This worker's head shard's partial of a layer's half for another worker's step (docs/sharding.md, "Head
     * parallelism"): refused when it holds no head shard, or not the slices {@code [first, end)} the stage believes.
     *
     * @param batch the attention half's sequences (null for the MLP half)
     */
    public float[] headShard(int layer, int first, int end, List<SequenceChunk> batch, float[] x, List<String> released) {
        HeadShardPartition holder = headShardHolder(first, end);
        try {
            released.forEach(holder::release);
            return batch == null ? holder.shard().mlp(layer, x) : holder.shard().attention(layer, batch, x);
        } catch (IllegalArgumentException e) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT, e.getMessage());
        }
    }

    /**
     * {@link #headShard} without waiting: checked on the calling thread (a refusal is thrown), computed on the
     * shard's engine thread, which hands {@code answer} the partial or the failure. For the transport thread that
     * read the request (WorkerService.Heads): the engine thread is then the only one woken for it.
     */
    public void headShardLater(int layer, int first, int end, List<SequenceChunk> batch, float[] x,
                               List<String> released, java.util.function.BiConsumer<float[], RuntimeException> answer) {
        HeadShardPartition holder = headShardHolder(first, end);
        holder.shard().later(() -> {
            float[] partial;
            try {
                released.forEach(holder::release);
                partial = batch == null ? holder.shard().mlp(layer, x) : holder.shard().attention(layer, batch, x);
            } catch (IllegalArgumentException e) {
                answer.accept(null, new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INVALID_ARGUMENT,
                        e.getMessage()));
                return;
            } catch (RuntimeException e) {
                answer.accept(null, e);
                return;
            }
            answer.accept(partial, null);
        });
    }

    private HeadShardPartition headShardHolder(int first, int end) {
        if (!(executor instanceof HeadShardPartition holder)) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION,
                    "this worker holds no loaded head shard (" + status.phase() + ")");
        }
        SliceTree.Range own = holder.placement().own().slices();
        if (own.first() != first || own.end() != end) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.FAILED_PRECONDITION, "this worker holds"
                    + " slices [" + own.first() + ", " + own.end() + "), not [" + first + ", " + end + ")");
        }
        return holder;
    }

    /** The loaded executor; absent until the partition is READY. */
    public PartitionExecutor executor() {
        PartitionExecutor e = loadedExecutor();
        if (e == null) {
            throw new ButterflyException(ErrorCode.VALIDATION_FAILED, ErrorKind.FAILED_PRECONDITION,
                    "no partition is ready on this worker (phase " + status.phase() + ")");
        }
        return e;
    }

    /** The loaded executor, or null until the partition is READY. */
    public PartitionExecutor loadedExecutor() {
        PartitionExecutor e = executor;
        return e == null || status.phase() != LoadPhase.READY ? null : e;
    }

    /** The files the engine loaded for the ready partition; null until one is READY. */
    public LoadedPartition loaded() {
        return status.phase() == LoadPhase.READY ? loaded : null;
    }

    /** Stops loading and frees the partition (on shutdown). */
    public void close() {
        loader.shutdownNow();
        closeReplaced();
        PartitionExecutor e = executor;
        if (e != null) {
            e.close();
        }
    }
}
