package io.butterfly.coordinator.inference;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.inference.sampling.TokenChoice;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import io.butterfly.coordinator.inference.scheduler.Chunk;
import io.butterfly.coordinator.inference.scheduler.KvBudgets;
import io.butterfly.coordinator.inference.scheduler.MicroBatch;
import io.butterfly.coordinator.inference.scheduler.QueueFullException;
import io.butterfly.coordinator.inference.scheduler.Scheduler;
import io.butterfly.coordinator.inference.scheduler.SchedulerSettings;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine loop, in the shape of vLLM's engine core: schedule, execute, update from the output. One thread keeps
 * the pipeline full: whenever fewer micro-batches than allowed are in flight, the scheduler chooses the next one and
 * it goes into the first stage; whenever a micro-batch's logits come back, each of its sequences that was due a
 * token gets one (sampled, checked for its end, told to its listener), and the finished ones leave, their KV caches
 * freed on every stage. Requests and cancellations from other threads only queue work and wake the loop.
 *
 * <p>A step that fails for want of a stage (unreachable, declared FAILED, reassigned, out of time) pauses its
 * sequences instead of failing them: they keep their place, and once the pipeline serves again (the system READY,
 * or after a short backoff while it still says so) each replays its history through the pipeline (the stages that
 * kept its KV cache answer from it, the others compute it again) and goes on with its next token, the one a run
 * without the failure chooses. A sequence still paused after the recovery timeout
 * fails with the error that paused it, saying so.
 */
final class Engine implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Engine.class);
    /** Failures a new plan, a reload or a retry can mend: anything else fails the request at once. */
    private static final Set<ErrorKind> RESUMABLE = EnumSet.of(ErrorKind.UNAVAILABLE, ErrorKind.ABORTED,
            ErrorKind.DEADLINE_EXCEEDED, ErrorKind.FAILED_PRECONDITION, ErrorKind.UNKNOWN);
    /** Context of an error that ends an answer but not its generation, which a client resumes elsewhere. */
    static final String RESUMABLE_CONTEXT = "resumable";
    /**
     * Longer than the failure detector takes to declare a crashed stage FAILED (its stream's 250 ms reconnect grace, a
     * 25 ms monitor tick, the commit): a stage lost to a crash then stops the sending (DEGRADED) before a retry, which
     * would replay every paused history into a pipeline with a dead stage while the spare loads, for nothing.
     */
    private static final long FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(500);
    private static final long MAX_BACKOFF_NANOS = TimeUnit.SECONDS.toNanos(2);

    /** Where steps go now: the stages, the epoch they serve, and their KV budgets. */
    record Serving(Pipeline.Route route, long epoch, List<KvBudgets.Stage> stages) {
    }

    /** A micro-batch that came back, with its answer or why it failed. */
    private record Returned(MicroBatch batch, StepResult result, Throwable failure, long sentNanos, long returnedNanos) {
    }

    private final Scheduler scheduler;
    private final Pipeline pipeline;
    private final TaskJournal journal;
    private final ServingMetrics metrics;
    private final RequestTracing tracing;
    private final LongSupplier clockMillis;
    private final long recoveryTimeoutNanos;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final Map<String, Sequence> sequences = new LinkedHashMap<>();
    private final Deque<Returned> returned = new ArrayDeque<>();
    private final Map<Long, Pipeline.Route> routes = new HashMap<>();
    private final ExecutorService releases = Executors.newSingleThreadExecutor(r -> daemon(r, "engine-releases"));
    private final Thread loop;
    /** Null while the cluster does not serve (a stage failed, a plan is loading): nothing is sent meanwhile. */
    private Serving serving;
    /** After a step failed for want of a stage, nothing is sent before this (System.nanoTime); 0: no backoff. */
    private long backoffUntilNanos;
    private long backoffNanos = FIRST_BACKOFF_NANOS;
    private int inFlight;
    private boolean closed;
    /** Tokens chosen since start; written by the engine's thread only, read by anyone. */
    private volatile long generatedTokens;

    Engine(SchedulerSettings settings, Duration recoveryTimeout, Pipeline pipeline, TaskJournal journal,
           ServingMetrics metrics, RequestTracing tracing, LongSupplier clockMillis) {
        this.scheduler = new Scheduler(settings);
        this.recoveryTimeoutNanos = recoveryTimeout.toNanos();
        this.pipeline = pipeline;
        this.journal = journal;
        this.metrics = metrics;
        this.tracing = tracing;
        this.clockMillis = clockMillis;
        this.loop = daemon(this::run, "engine");
        loop.start();
    }

    private static Thread daemon(Runnable r, String name) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        return t;
    }

    /**
     * Where the next steps go; the running sequences' reservations are counted against the new budgets, and paused
     * sequences resume there.
     */
    void serve(Serving next) {
        lock.lock();
        try {
            if (serving == null || !serving.stages().equals(next.stages())) {
                scheduler.pipeline(new KvBudgets(next.stages()), next.stages().size());
            }
            serving = next;
            backoffUntilNanos = 0;
            backoffNanos = FIRST_BACKOFF_NANOS;
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    /** The cluster does not serve now: nothing is sent until {@link #serve}; running sequences wait, paused. */
    void hold() {
        lock.lock();
        try {
            serving = null;
        } finally {
            lock.unlock();
        }
    }

    /** The stage a sequence reaching {@code positions} could never fit on, even alone; null when it fits. */
    KvBudgets.Stage neverFits(int positions) {
        lock.lock();
        try {
            return scheduler.budgets().neverFits(positions);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Queues a sequence (refused when the queue is full or the engine stopped) and wakes the loop. Called on the
     * request's thread, so the request's span starts in the caller's trace.
     */
    void submit(Sequence s) {
        submit(s, true);
    }

    /**
     * Queues a sequence whose start is already recorded (an idempotent request commits its start before it runs).
     */
    void submitRecorded(Sequence s) {
        submit(s, false);
    }

    private void submit(Sequence s, boolean recordStart) {
        lock.lock();
        try {
            if (closed) {
                throw stopping();
            }
            scheduler.add(s.progress);
            s.trace = tracing.start(s.taskId());
            sequences.put(s.taskId(), s);
            if (recordStart) {
                journal.started(s.taskId(), s.request, clockMillis.getAsLong());
            }
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    /** Queues several sequences, all or none: the queue must hold them all. */
    void submitAll(List<Sequence> all) {
        lock.lock();
        try {
            if (scheduler.waiting() + all.size() > scheduler.settings().maxWaiting() && all.size() > 1) {
                throw new QueueFullException(all.size()
                        + " requests do not fit the queue (" + scheduler.waiting() + " of "
                        + scheduler.settings().maxWaiting() + " places taken: butterfly.coordinator.engine.max-waiting);"
                        + " retry shortly");
            }
            all.forEach(this::submit);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Queues a sequence that carries on a task whose tokens so far {@code s} holds (its replica is gone, or its
     * client came back): it replays them into new caches, then generates the rest. Its listener is told the tokens
     * after {@code afterIndex} it already has at once, then each new one.
     */
    void submitResumed(Sequence s, int afterIndex) {
        lock.lock();
        try {
            if (closed) {
                throw stopping();
            }
            if (sequences.containsKey(s.taskId())) {
                throw new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE, "task " + s.taskId()
                        + " is still leaving this coordinator: retry shortly");
            }
            s.newAttempt();
            s.listener = TokenListener.after(afterIndex, s.listener); // what it regenerates up to there is not news
            scheduler.addResumed(s.progress, s.historyLength());
            s.trace = tracing.start(s.taskId());
            sequences.put(s.taskId(), s);
            s.pausedSinceNanos = System.nanoTime();
            tellFrom(s, afterIndex);
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Gives a client that came back for a task this replica runs the tokens after {@code afterIndex} at once, then
     * each new one; null when the task does not run here.
     */
    Sequence attach(String taskId, int afterIndex, TokenListener listener) {
        lock.lock();
        try {
            Sequence s = sequences.get(taskId);
            if (s == null || s.movedTo != null || s.cancelled != null) {
                return null;
            }
            s.detached = null;
            s.listener = TokenListener.after(afterIndex, listener);
            tellFrom(s, afterIndex);
            return s;
        } finally {
            lock.unlock();
        }
    }

    private static void tellFrom(Sequence s, int afterIndex) {
        if (s.listener != null) {
            for (int i = Math.max(0, afterIndex + 1); i < s.generated.size(); i++) {
                s.listener.onToken(s.token(i));
            }
        }
    }

    void cancel(Sequence s, String reason) {
        lock.lock();
        try {
            if (sequences.containsKey(s.taskId()) && s.cancelled == null) {
                s.cancelled = reason;
                work.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    void detach(Sequence s, String reason) {
        lock.lock();
        try {
            if (sequences.get(s.taskId()) == s && s.detached == null) {
                s.detached = reason;
                work.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /** The task moved to replica {@code to}: it leaves here at its next step, recording nothing more. */
    void relinquish(String taskId, String to) {
        lock.lock();
        try {
            Sequence s = sequences.get(taskId);
            if (s != null && s.movedTo == null) {
                s.movedTo = to;
                work.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    boolean running(String taskId) {
        lock.lock();
        try {
            return sequences.containsKey(taskId);
        } finally {
            lock.unlock();
        }
    }

    int runningCount() {
        lock.lock();
        try {
            return scheduler.running();
        } finally {
            lock.unlock();
        }
    }

    int waitingCount() {
        lock.lock();
        try {
            return scheduler.waiting();
        } finally {
            lock.unlock();
        }
    }

    /** Sequences waiting for the pipeline to serve again (paused or replaying their history). */
    int pausedCount() {
        lock.lock();
        try {
            return (int) sequences.values().stream().filter(s -> s.pausedSinceNanos != 0).count();
        } finally {
            lock.unlock();
        }
    }

    /** Tokens generated since the engine started, counted as they are chosen. */
    long generatedTokens() {
        return generatedTokens;
    }

    /** Each stage's KV cache reserved by this replica's sequences, as a share of its budget. */
    Map<String, Double> kvCacheUsage() {
        lock.lock();
        try {
            return scheduler.budgets().usage();
        } finally {
            lock.unlock();
        }
    }

    private void run() {
        lock.lock();
        try {
            while (!closed) {
                drainReturned();
                leaveWhenDue();
                giveUpPaused();
                resumePaused();
                fill();
                if (returned.isEmpty() && !closed) {
                    awaitWork();
                }
            }
        } catch (RuntimeException | Error e) {
            log.error("the engine loop stopped", e);
            failAll(new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.INTERNAL,
                    "internal error: the engine stopped (" + e.getClass().getSimpleName() + ")"));
        } finally {
            lock.unlock();
        }
    }

    /** Waits for work, or until a backoff ends or a paused sequence's recovery timeout passes. */
    private void awaitWork() {
        long now = System.nanoTime();
        long next = Long.MAX_VALUE;
        if (backoffUntilNanos > now && (scheduler.running() > 0 || scheduler.waiting() > 0)) {
            next = backoffUntilNanos;
        }
        for (Sequence s : sequences.values()) {
            if (s.pausedSinceNanos != 0) {
                next = Math.min(next, s.pausedSinceNanos + recoveryTimeoutNanos);
            }
        }
        if (next == Long.MAX_VALUE) {
            work.awaitUninterruptibly();
            return;
        }
        try {
            work.awaitNanos(Math.max(1, next - now));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // kept for whoever interrupted; the loop ends only when closed
        }
    }

    private boolean sending() {
        return serving != null && System.nanoTime() >= backoffUntilNanos;
    }

    /** Sends micro-batches while fewer than allowed are in flight and the scheduler has one. */
    private void fill() {
        while (sending() && inFlight < scheduler.microBatches()) {
            MicroBatch batch = scheduler.next();
            if (batch == null) {
                return;
            }
            send(batch);
        }
    }

    private void send(MicroBatch batch) {
        List<StepInput.Slice> slices = new ArrayList<>(batch.chunks().size());
        long[] tokens = new long[batch.tokens()];
        int at = 0;
        for (Chunk c : batch.chunks()) {
            Sequence s = sequences.get(c.sequence().id());
            s.appendInput(tokens, at, c.position(), c.numTokens());
            at += c.numTokens();
            slices.add(new StepInput.Slice(s.stageId(), c.position(), c.numTokens(), c.sequence().reservePositions(),
                    s.trace.stepStarted(batch.id(), c.position(), c.numTokens(), batch.chunks().size()), !c.samples()));
        }
        Serving now = serving;
        routes.put(batch.id(), now.route());
        inFlight++;
        metrics.batchScheduled(slices.size(), tokens.length);
        long sent = System.nanoTime();
        pipeline.submit(now.route(), new StepInput(batch.id(), now.epoch(), slices, tokens))
                .whenComplete((result, failure) -> returned(new Returned(batch, result, failure, sent, System.nanoTime())));
    }

    private void returned(Returned r) {
        lock.lock();
        try {
            returned.add(r);
            work.signal();
        } finally {
            lock.unlock();
        }
    }

    private void drainReturned() {
        Returned r;
        while ((r = returned.poll()) != null) {
            inFlight--;
            Pipeline.Route route = routes.remove(r.batch().id());
            List<String> ended = new ArrayList<>();
            if (r.failure() != null) {
                failed(r, ended);
            } else {
                backoffNanos = FIRST_BACKOFF_NANOS;
                update(r, ended);
            }
            release(route, ended);
        }
    }

    /** A micro-batch failed: its sequences pause when a new plan or a retry may mend it, and fail otherwise. */
    private void failed(Returned r, List<String> ended) {
        scheduler.stepFailed(r.batch());
        RuntimeException cause = asRuntime(r.failure());
        boolean resumable = resumable(cause);
        for (Chunk c : r.batch().chunks()) {
            Sequence s = sequences.get(c.sequence().id());
            if (s == null) {
                continue; // ended meanwhile
            }
            s.trace.stepFailed(r.batch().id(), cause);
            if (c.attempt() != s.progress.attempt() || s.progress.paused()) {
                continue; // a step of an attempt given up, or paused by an earlier step of its replay
            }
            // A replay refused memory waits: a stage may not have freed the caches of its earlier attempt yet.
            boolean pauses = resumable || c.attempt() > 0 && cause instanceof ButterflyException b
                    && b.kind() == ErrorKind.RESOURCE_EXHAUSTED;
            if (pauses && s.cancelled == null) {
                pause(s, cause);
            } else {
                end(s, null, cause, ended);
            }
        }
        if (backoffUntilNanos <= System.nanoTime() && scheduler.paused() > 0) {
            backoffUntilNanos = System.nanoTime() + backoffNanos;
            backoffNanos = Math.min(2 * backoffNanos, MAX_BACKOFF_NANOS);
        }
    }

    static boolean resumable(RuntimeException cause) {
        return cause instanceof ButterflyException b && RESUMABLE.contains(b.kind());
    }

    private void pause(Sequence s, RuntimeException cause) {
        scheduler.pause(s.progress);
        if (s.pausedSinceNanos == 0) {
            s.pausedSinceNanos = System.nanoTime();
            s.pauseCause = cause;
            log.info("task {} paused after {} tokens: {}", s.taskId(), s.generated.size(), cause.getMessage());
            journal.paused(s.taskId(), cause.getMessage(), clockMillis.getAsLong());
        }
    }

    /**
     * Starts paused sequences again once the pipeline serves: each on a new attempt that replays its history under the
     * same stage id, so that a stage that kept the sequence's KV cache answers the replayed steps from what it sent the
     * first time and only the stages that lost it compute (see the worker's {@code SentRows}).
     */
    private void resumePaused() {
        if (!sending() || scheduler.paused() == 0) {
            return;
        }
        for (Sequence s : sequences.values()) {
            if (s.progress.paused()) {
                scheduler.resume(s.progress, s.historyLength());
                log.info("task {} resumes: replaying {} tokens", s.taskId(), s.historyLength());
            }
        }
    }

    /** Fails the sequences that have waited to generate again for longer than the recovery timeout. */
    private void giveUpPaused() {
        long now = System.nanoTime();
        List<String> ended = new ArrayList<>();
        for (Sequence s : List.copyOf(sequences.values())) {
            if (s.pausedSinceNanos != 0 && now - s.pausedSinceNanos >= recoveryTimeoutNanos) {
                RuntimeException cause = s.pauseCause != null ? s.pauseCause
                        : new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE, "no stage answered");
                ErrorCode code = cause instanceof ButterflyException b ? b.code() : ErrorCode.INTERNAL_ERROR;
                ErrorKind kind = cause instanceof ButterflyException b ? b.kind() : ErrorKind.UNAVAILABLE;
                end(s, null, new ButterflyException(code, kind, "the generation could not resume within "
                        + Duration.ofNanos(recoveryTimeoutNanos) + " (butterfly.coordinator.engine.recovery-timeout)"
                        + " after " + s.generated.size() + " tokens: " + cause.getMessage(), Map.of(), cause), ended);
            }
        }
        if (serving != null) {
            release(serving.route(), ended);
        }
    }

    /** Gives each sequence of a returned micro-batch its token, and ends those that are done. */
    private void update(Returned r, List<String> ended) {
        long pipelineNanos = r.returnedNanos() - r.sentNanos();
        long inStages = 0;
        for (StepResult.StageTiming t : r.result().timings()) {
            inStages += t.wallNanos();
            metrics.stageStep(t.nodeId(), t.computeNanos() / 1e9, t.wallNanos() / 1e9);
        }
        long transport = Math.max(0, pipelineNanos - inStages);
        metrics.transport(transport / 1e9, r.result().timings().size() + 1);
        scheduler.stepped(r.batch());
        float[] logits = null;
        int vocab = 0;
        List<Chunk> chunks = r.batch().chunks();
        int samplingChunks = (int) chunks.stream().filter(Chunk::samples).count();
        int row = -1; // the logits row of chunk i: the last stage returns rows only for the chunks that sample
        for (int i = 0; i < chunks.size(); i++) {
            Chunk c = chunks.get(i);
            if (c.samples()) {
                row++;
            }
            Sequence s = sequences.get(c.sequence().id());
            if (s == null) {
                continue; // ended meanwhile
            }
            s.trace.stepEnded(r.batch().id());
            if (c.attempt() != s.progress.attempt() || s.progress.paused()) {
                continue; // a step of an attempt given up
            }
            s.addStep(r.result().timings(), pipelineNanos, transport);
            if (s.cancelled != null) {
                end(s, null, cancelledError(s), ended);
                continue;
            }
            if (!c.samples()) {
                continue;
            }
            if (logits == null) {
                logits = logits(r.result(), samplingChunks, chunks.size());
                vocab = (int) (long) r.result().logitsShape().get(1);
            }
            // A worker from before skip_logits (a rolling upgrade) returns a row for every chunk.
            int at = logits.length / vocab == chunks.size() ? i : row;
            try {
                String finish = sample(s, Arrays.copyOfRange(logits, at * vocab, (at + 1) * vocab));
                if (finish != null) {
                    end(s, finish, null, ended);
                }
            } catch (RuntimeException e) {
                end(s, null, e, ended);
            }
        }
    }

    /** The logits rows: one per sampling chunk, or (from a worker that predates skip_logits) one per chunk. */
    private static float[] logits(StepResult result, int sampling, int chunks) {
        float[] logits = result.logits();
        List<Long> shape = result.logitsShape();
        if (shape.size() != 2 || shape.get(1) < 1 || (shape.get(0) != sampling && shape.get(0) != chunks)
                || logits.length != shape.get(0) * shape.get(1)) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL, "last stage returned logits of"
                    + " shape " + shape + " for " + sampling + " sampling sequence(s) of " + chunks);
        }
        return logits;
    }

    /** Chooses the sequence's next token and tells its listener; returns its finish reason once it ends. */
    private String sample(Sequence s, float[] logits) {
        if (logits.length != s.model.config().vocabSize()) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                    "last stage returned logits of " + logits.length + " tokens, the vocabulary has "
                            + s.model.config().vocabSize());
        }
        long t0 = System.nanoTime();
        int step = s.generated.size();
        TokenChoice choice;
        try {
            choice = s.sampler.choose(logits, step);
        } catch (IllegalArgumentException e) { // NaN, +infinity, all -infinity: the last stage's failure (502)
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                    "last stage returned logits that cannot be sampled at step " + step + ": " + e.getMessage());
        }
        long now = System.nanoTime();
        s.samplingNanos += now - t0;
        if (step == 0) {
            s.firstTokenNanos = now;
            metrics.firstToken((now - s.arrivedNanos) / 1e9);
        } else {
            metrics.interTokenLatency((now - s.lastTokenNanos) / 1e9);
        }
        s.lastTokenNanos = now;
        generatedTokens++;
        long atMs = clockMillis.getAsLong();
        if (s.pausedSinceNanos != 0) {
            s.pausedSinceNanos = 0;
            s.pauseCause = null;
            log.info("task {} generates again at token {}", s.taskId(), step);
            journal.resumed(s.taskId(), atMs);
        }
        s.generated.add((long) choice.tokenId());
        s.logprobs.add(choice.logprob());
        s.topLogprobs.add(choice.topLogprobs());
        journal.progressed(s.taskId(), step, new TaskEvent.Token(choice.tokenId(), choice.logprob(),
                choice.topLogprobs().stream().map(t -> new TaskEvent.Alternative(t.tokenId(), t.logprob())).toList()), atMs);
        boolean eos = !s.ignoreEos && s.model.config().endsSequence(choice.tokenId());
        boolean last = eos || s.generated.size() == s.maxTokens;
        IncrementalText.Piece piece = s.text == null ? null : s.text.add(choice.tokenId(), last);
        boolean stopString = piece != null && piece.stopped();
        if (piece != null) {
            s.pieces.add(piece.text());
        }
        if (s.listener != null) {
            s.listener.onToken(s.token(step));
        }
        return eos || stopString ? "stop" : last ? "length" : null;
    }

    /**
     * Ends the sequences whose clients went away, leaves those whose client detached or whose task moved to another
     * replica; unless a micro-batch carries them (they go when it returns).
     */
    private void leaveWhenDue() {
        Map<Pipeline.Route, List<String>> left = new HashMap<>();
        for (Sequence s : List.copyOf(sequences.values())) {
            if (s.progress.inFlight() || (s.cancelled == null && s.detached == null && s.movedTo == null)) {
                continue;
            }
            List<String> ids = new ArrayList<>();
            if (s.cancelled != null) {
                end(s, null, cancelledError(s), ids);
            } else {
                leave(s, ids);
            }
            if (serving != null) {
                left.computeIfAbsent(serving.route(), k -> new ArrayList<>()).addAll(ids);
            }
        }
        left.forEach(this::release);
    }

    /**
     * A sequence leaves without ending its task: its client detached (the task stays recorded, paused, for a client
     * that comes back), or the task moved to another replica (which records it from now on).
     */
    private void leave(Sequence s, List<String> ids) {
        sequences.remove(s.taskId());
        scheduler.remove(s.progress);
        ids.add(s.stageId());
        String why;
        ButterflyException left;
        if (s.movedTo != null) {
            why = "the generation moved to coordinator " + s.movedTo + ", where its client resumed it";
            left = goesOnElsewhere(ErrorKind.ABORTED, why);
        } else {
            why = s.detached;
            journal.paused(s.taskId(), why, clockMillis.getAsLong());
            left = goesOnElsewhere(ErrorKind.UNAVAILABLE, why
                    + ": the rest of the generation is kept for a client that comes back (Last-Event-ID)");
        }
        s.trace.ended(null, left, s.generated.size());
        s.fail(left);
        log.info("task {} left this replica after {} tokens: {}", s.taskId(), s.generated.size(), why);
        metrics.requestEnded((System.nanoTime() - s.arrivedNanos) / 1e9, s.prompt.length, s.generated.size(), "left");
    }

    private static RuntimeException cancelledError(Sequence s) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.CANCELLED, s.cancelled);
    }

    /** Ends a sequence: finished ({@code finish}) or failed ({@code failure}); its stage id joins {@code ended}. */
    private void end(Sequence s, String finish, RuntimeException failure, List<String> ended) {
        if (s == null || sequences.remove(s.taskId()) == null) {
            return;
        }
        scheduler.remove(s.progress);
        ended.add(s.stageId());
        long now = System.nanoTime();
        s.trace.ended(finish, failure, s.generated.size());
        // Recorded, then answered: a client that reads the task after its answer finds it ended.
        if (finish != null) {
            journal.finished(s.taskId(), List.copyOf(s.generated), finish, clockMillis.getAsLong());
            s.finish(finish, now);
        } else {
            journal.failed(s.taskId(), failure.getMessage() == null ? failure.toString() : failure.getMessage(),
                    clockMillis.getAsLong());
            s.fail(failure);
        }
        metrics.requestEnded((now - s.arrivedNanos) / 1e9, s.prompt.length, s.generated.size(),
                finish != null ? finish : "error");
    }

    /** Frees ended sequences on every stage of {@code route}, off the loop's thread. */
    private void release(Pipeline.Route route, List<String> ids) {
        if (route != null && !ids.isEmpty()) {
            List<String> batch = List.copyOf(ids);
            releases.execute(() -> pipeline.release(route, batch));
        }
    }

    /** Frees sequences this replica no longer runs (abandoned by an earlier start), on the stages serving now. */
    void releaseAbandoned(List<String> ids) {
        lock.lock();
        try {
            if (serving != null) {
                release(serving.route(), ids);
            }
        } finally {
            lock.unlock();
        }
    }

    private static RuntimeException asRuntime(Throwable t) {
        Throwable cause = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
        return cause instanceof RuntimeException r ? r
                : new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.INTERNAL, "internal error: " + cause);
    }

    private static ButterflyException stopping() {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE,
                "the coordinator is shutting down: retry on another replica");
    }

    /**
     * Why a generation's answer ends here though the generation does not: a client resumes it at any replica
     * ({@link #RESUMABLE_CONTEXT} tells it so).
     */
    private static ButterflyException goesOnElsewhere(ErrorKind kind, String why) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, kind, why, Map.of(RESUMABLE_CONTEXT, "true"), null);
    }

    private void failAll(RuntimeException why) {
        List<String> ids = new ArrayList<>();
        for (Sequence s : List.copyOf(sequences.values())) {
            end(s, null, why, ids);
        }
        if (serving != null) {
            release(serving.route(), ids);
        }
    }

    /**
     * Stops the loop: every sequence leaves, recorded paused with its tokens so far (another replica resumes it for a
     * client that comes back with {@code Last-Event-ID} or its {@code Idempotency-Key}), its answer here failing
     * with "retry on another replica"; its caches are freed on the stages.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            List<String> ids = new ArrayList<>();
            for (Sequence s : List.copyOf(sequences.values())) {
                sequences.remove(s.taskId());
                scheduler.remove(s.progress);
                ids.add(s.stageId());
                journal.paused(s.taskId(), "its coordinator stopped", clockMillis.getAsLong());
                ButterflyException left = goesOnElsewhere(ErrorKind.UNAVAILABLE,
                        "the coordinator is shutting down: resume at another replica (Last-Event-ID, Idempotency-Key)");
                s.trace.ended(null, left, s.generated.size());
                s.fail(left);
            }
            if (serving != null) {
                release(serving.route(), ids);
            }
            work.signal();
        } finally {
            lock.unlock();
        }
        try {
            loop.join(5_000);
            releases.shutdown();
            releases.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
