package io.butterfly.coordinator.inference;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.inference.sampling.TokenChoice;
import io.butterfly.coordinator.inference.scheduler.Chunk;
import io.butterfly.coordinator.inference.scheduler.KvBudgets;
import io.butterfly.coordinator.inference.scheduler.MicroBatch;
import io.butterfly.coordinator.inference.scheduler.QueueFullException;
import io.butterfly.coordinator.inference.scheduler.Scheduler;
import io.butterfly.coordinator.inference.scheduler.SchedulerSettings;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
 */
final class Engine implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Engine.class);

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
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final Map<String, Sequence> sequences = new HashMap<>();
    private final Deque<Returned> returned = new ArrayDeque<>();
    private final Map<Long, Pipeline.Route> routes = new HashMap<>();
    private final ExecutorService releases = Executors.newSingleThreadExecutor(r -> daemon(r, "engine-releases"));
    private final Thread loop;
    private Serving serving;
    private int inFlight;
    private boolean closed;
    /** Tokens chosen since start; written by the engine's thread only, read by anyone. */
    private volatile long generatedTokens;

    Engine(SchedulerSettings settings, Pipeline pipeline, TaskJournal journal, ServingMetrics metrics,
           RequestTracing tracing, LongSupplier clockMillis) {
        this.scheduler = new Scheduler(settings);
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

    /** Where the next steps go; the running sequences' reservations are counted against the new budgets. */
    void serve(Serving next) {
        lock.lock();
        try {
            if (serving == null || !serving.stages().equals(next.stages())) {
                scheduler.pipeline(new KvBudgets(next.stages()), next.stages().size());
            }
            serving = next;
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
        lock.lock();
        try {
            if (closed) {
                throw stopping();
            }
            scheduler.add(s.progress);
            s.trace = tracing.start(s.taskId());
            sequences.put(s.taskId(), s);
            journal.started(s.taskId(), s.prompt.length, clockMillis.getAsLong());
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
                endCancelled();
                fill();
                if (returned.isEmpty() && !closed) {
                    work.awaitUninterruptibly();
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

    /** Sends micro-batches while fewer than allowed are in flight and the scheduler has one. */
    private void fill() {
        while (serving != null && inFlight < scheduler.microBatches()) {
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
            s.appendInput(tokens, at, c.numTokens());
            at += c.numTokens();
            slices.add(new StepInput.Slice(s.taskId(), c.position(), c.numTokens(), c.sequence().reservePositions(),
                    s.trace.stepStarted(batch.id(), c.position(), c.numTokens(), batch.chunks().size())));
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
                scheduler.stepFailed(r.batch());
                RuntimeException cause = asRuntime(r.failure());
                for (Chunk c : r.batch().chunks()) {
                    end(sequences.get(c.sequence().id()), null, cause, ended); // its trace's step ends with it
                }
            } else {
                update(r, ended);
            }
            release(route, ended);
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
        for (int i = 0; i < chunks.size(); i++) {
            Chunk c = chunks.get(i);
            Sequence s = sequences.get(c.sequence().id());
            s.addStep(r.result().timings(), pipelineNanos, transport);
            s.trace.stepEnded();
            if (s.cancelled != null) {
                end(s, null, cancelledError(s), ended);
                continue;
            }
            if (!c.samples()) {
                continue;
            }
            if (logits == null) {
                logits = logits(r.result(), chunks.size());
                vocab = logits.length / chunks.size();
            }
            try {
                String finish = sample(s, Arrays.copyOfRange(logits, i * vocab, (i + 1) * vocab));
                if (finish != null) {
                    end(s, finish, null, ended);
                }
            } catch (RuntimeException e) {
                end(s, null, e, ended);
            }
        }
    }

    private static float[] logits(StepResult result, int sequences) {
        float[] logits = result.logits();
        List<Long> shape = result.logitsShape();
        if (shape.size() != 2 || shape.get(0) != sequences || logits.length != sequences * shape.get(1)) {
            throw new ButterflyException(ErrorCode.INVALID_MESSAGE, ErrorKind.INTERNAL,
                    "last stage returned logits of shape " + shape + " for " + sequences + " sequence(s)");
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
        s.generated.add((long) choice.tokenId());
        s.logprobs.add(choice.logprob());
        s.topLogprobs.add(choice.topLogprobs());
        boolean eos = !s.ignoreEos && s.model.config().endsSequence(choice.tokenId());
        boolean last = eos || s.generated.size() == s.maxTokens;
        IncrementalText.Piece piece = s.text == null ? null : s.text.add(choice.tokenId(), last);
        boolean stopString = piece != null && piece.stopped();
        if (s.listener != null) {
            s.listener.onToken(new GeneratedToken(s.taskId(), step, choice.tokenId(), piece.text(), choice.logprob(),
                    choice.topLogprobs()));
        }
        return eos || stopString ? "stop" : last ? "length" : null;
    }

    /** Ends the sequences whose clients went away, unless a micro-batch carries them (they end when it returns). */
    private void endCancelled() {
        Map<Pipeline.Route, List<String>> ended = new HashMap<>();
        for (Sequence s : List.copyOf(sequences.values())) {
            if (s.cancelled != null && !s.progress.inFlight()) {
                boolean started = s.progress.computed() > 0;
                List<String> ids = new ArrayList<>();
                end(s, null, cancelledError(s), ids);
                if (started && serving != null) {
                    ended.computeIfAbsent(serving.route(), k -> new ArrayList<>()).addAll(ids);
                }
            }
        }
        ended.forEach(this::release);
    }

    private static RuntimeException cancelledError(Sequence s) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.CANCELLED, s.cancelled);
    }

    /** Ends a sequence: finished ({@code finish}) or failed ({@code failure}); its id joins {@code ended}. */
    private void end(Sequence s, String finish, RuntimeException failure, List<String> ended) {
        if (s == null || sequences.remove(s.taskId()) == null) {
            return;
        }
        scheduler.remove(s.progress);
        ended.add(s.taskId());
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

    private void failAll(RuntimeException why) {
        List<String> ids = new ArrayList<>();
        for (Sequence s : List.copyOf(sequences.values())) {
            end(s, null, why, ids);
        }
        if (serving != null) {
            release(serving.route(), ids);
        }
    }

    /** Ends every sequence (told: the coordinator is stopping), frees them on the stages and stops the loop. */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            failAll(stopping());
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
