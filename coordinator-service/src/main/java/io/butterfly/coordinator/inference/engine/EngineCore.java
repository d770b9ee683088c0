package io.butterfly.coordinator.inference.engine;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.error.Backoff;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.structured.TokenConstraint;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine core, in the shape of vLLM's: one thread owns the {@link Scheduler} and with it every sequence's state,
 * and turns a loop: take the messages other threads left (submissions, cancellations, detaches, moves, the pipeline's
 * outcomes, where to send), update from each outcome, then schedule and send. Whenever fewer micro-batches than
 * allowed are in flight, the scheduler chooses the next one and it goes into the first stage; whenever a micro-batch's
 * logits come back, each of its sequences that was due a token gets one (sampled, then checked for its end), and
 * the finished ones leave, their KV caches freed on every stage. No other thread waits on this one: they post messages,
 * and read what it {@link #load() publishes}. What becomes of each token (text, stop strings, listeners, the task
 * journal, metrics) is the {@link SequenceOutputs}' business, outside the core.
 *
 * <p>A step that fails for want of a stage (unreachable, declared FAILED, reassigned, out of time) pauses its
 * sequences instead of failing them: they keep their place, and once the pipeline serves again (a new {@link Serving},
 * or after a short backoff while it still says so) each replays its history through the pipeline (the stages that
 * kept its KV cache answer from it, the others compute it again) and goes on with its next token, the one a run
 * without the failure chooses. A sequence still paused after the recovery timeout fails with the error that paused it,
 * saying so.
 */
public final class EngineCore implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(EngineCore.class);
    /** Context of an error that ends an answer but not its generation, which a client resumes elsewhere. */
    public static final String RESUMABLE_CONTEXT = "resumable";
    /**
     * Longer than the failure detector takes to declare a crashed stage FAILED (its stream's 250 ms reconnect grace, a
     * 25 ms monitor tick, the commit): a stage lost to a crash then stops the sending (DEGRADED) before a retry, which
     * would replay every paused history into a pipeline with a dead stage while the spare loads, for nothing.
     */
    private static final Backoff HOLD_OFF = Backoff.exponential(Duration.ofMillis(500), Duration.ofSeconds(2));

    /** Where steps go now: the stages, the epoch they serve, and their KV budgets. */
    public record Serving(Pipeline.Route route, long epoch, List<KvBudgets.Stage> stages,
                          java.util.function.BooleanSupplier prefixCaching) {

        public Serving {
            stages = List.copyOf(stages);
        }

        /** Stages not known to keep prefix caches: every prompt is fed in its chunks as they are computed. */
        public Serving(Pipeline.Route route, long epoch, List<KvBudgets.Stage> stages) {
            this(route, epoch, stages, () -> false);
        }

        /** The stage a sequence reaching {@code positions} could never fit on, even alone; null when it fits. */
        public KvBudgets.Stage neverFits(int positions) {
            return new KvBudgets(stages).neverFits(positions);
        }
    }

    /**
     * What other threads read of the engine, as its thread last published it: sequences running (holding KV caches,
     * paused ones too), waiting to start, waiting to generate again (paused or replaying), each stage's KV cache held
     * (0..1), and the tasks here.
     */
    public record Load(int running, int waiting, int paused, Map<String, Double> kvCacheUsage, Set<String> taskIds) {

        static final Load NONE = new Load(0, 0, 0, Map.of(), Set.of());
    }

    /**
     * What checks a step's result before the engine uses it (docs/verified-execution.md#audits): an audit of it by
     * another placement. {@link #NONE} uses every result as it comes.
     */
    public interface StepAudit {

        StepAudit NONE = new StepAudit() {
        };

        /**
         * Called on the engine's thread as {@code input} is sent (so it sees every step of a sequence in order);
         * answers what the engine takes as the step's outcome: {@code served} itself, or a result held until its
         * audit agrees, failing (resumably: the sequences pause and replay) when it does not.
         */
        default CompletableFuture<StepResult> sent(StepInput input, CompletableFuture<StepResult> served) {
            return served;
        }

        /** Sequences (stage ids) that ended here: what the audit kept of them may go. */
        default void released(List<String> ids) {
        }
    }

    /** What other threads ask of the loop; it takes them in order. */
    private sealed interface Message {
    }

    /**
     * Sequences queued together: the loop takes them in one pass, so they can share the next micro-batch.
     *
     * @param replay they carry on tasks from their tokens so far (taken over, or a client came back)
     */
    private record Submit(List<Sequence> sequences, boolean replay) implements Message {
    }

    private record Cancel(Sequence sequence, String reason) implements Message {
    }

    private record Detach(Sequence sequence, String reason) implements Message {
    }

    private record MoveTo(String taskId, String replica) implements Message {
    }

    private record Attach(String taskId, Function<Sequence, ?> action, CompletableFuture<Object> answer)
            implements Message {
    }

    /** @param serving null: the cluster does not serve */
    private record Serve(Serving serving) implements Message {
    }

    private record Returned(MicroBatch batch, Pipeline.Route route, StepResult result, Throwable failure,
                            long sentNanos, long returnedNanos) implements Message {
    }

    private record Release(List<String> stageIds) implements Message {
    }

    private record Stop() implements Message {
    }

    private final Scheduler scheduler;
    private final UpdateFromOutput updates;
    private final Pipeline pipeline;
    private final ServingMetrics metrics;
    private final BlockingQueue<Message> inbox = new LinkedBlockingQueue<>();
    private final ExecutorService releases = Executors.newSingleThreadExecutor(DaemonThreads.named("engine-releases"));
    private final Thread loop;
    /** Set by {@link #close}: new work is refused. */
    private volatile boolean stopping;
    /** Set once the loop ended: a message posted after it is answered by its poster ({@link #drainAfterStop}). */
    private volatile boolean stopped;
    private volatile Load load = Load.NONE;
    private volatile StepAudit audit = StepAudit.NONE;

    // The loop's own, touched by its thread only.
    /** Null while the cluster does not serve (a stage failed, a plan is loading): nothing is sent meanwhile. */
    private Serving serving;
    /** After a step failed for want of a stage, nothing is sent before this (System.nanoTime); 0: no backoff. */
    private long backoffUntilNanos;
    /** Steps failed for want of a stage since one last came back or the pipeline changed: they lengthen the backoff. */
    private int failuresInARow;
    private int inFlight;
    /** Constraints of sequences in the steps sent since the loop last prepared masks. */
    private final List<TokenConstraint> masksDue = new ArrayList<>();

    public EngineCore(SchedulerSettings settings, Duration recoveryTimeout, Pipeline pipeline, ServingMetrics metrics) {
        this.scheduler = new Scheduler(settings);
        this.updates = new UpdateFromOutput(scheduler, metrics, recoveryTimeout);
        this.pipeline = pipeline;
        this.metrics = metrics;
        this.loop = DaemonThreads.named("engine").newThread(this::run);
        loop.start();
    }

    /**
     * Where the next steps go; the running sequences' reservations are counted against the new budgets, and paused
     * sequences resume there.
     */
    public void serve(Serving next) {
        post(new Serve(next));
    }

    /** The cluster does not serve now: nothing is sent until {@link #serve}; running sequences wait, paused. */
    public void hold() {
        post(new Serve(null));
    }

    /** Queues a sequence, refused when the queue is full ({@link QueueFullException}) or the engine stops. */
    public void submit(Sequence s) {
        submitAll(List.of(s));
    }

    /**
     * Queues several sequences, all or none: the queue must hold them all. One whose prompt an earlier one of them has
     * (the choices of one request) feeds it once that one's is cached, so the stages compute the prompt once.
     */
    public void submitAll(List<Sequence> all) {
        take(all.get(0).tenant(), all.size());
        PromptLeaders.assign(all);
        all.forEach(s -> s.outputs().submitted());
        post(new Submit(List.copyOf(all), false));
    }

    /**
     * Queues a sequence that carries on a task whose tokens so far it holds (its replica is gone, or its client came
     * back): it replays them into new caches, then generates the rest. Refused (its answer failing) while the task's
     * earlier sequence still leaves this engine.
     */
    public void submitReplay(Sequence s) {
        take(s.tenant(), 1);
        s.outputs().submitted();
        post(new Submit(List.of(s), true));
    }

    private void take(String key, int places) {
        if (stopping) {
            throw stopping();
        }
        scheduler.places().take(key, places);
    }

    /**
     * Runs {@code action} on the engine's thread with task {@code taskId}'s sequence, if it runs here and is neither
     * cancelled nor moving elsewhere (a client that came back for it: it stays, if it was to leave); completes with
     * what the action answers, or null.
     */
    @SuppressWarnings("unchecked")
    public <T> CompletableFuture<T> attach(String taskId, Function<Sequence, T> action) {
        CompletableFuture<Object> answer = new CompletableFuture<>();
        post(new Attach(taskId, action, answer));
        return (CompletableFuture<T>) answer;
    }

    /** Ends the sequence at its next step, as failed with {@code reason}. */
    public void cancel(Sequence s, String reason) {
        post(new Cancel(s, reason));
    }

    /** The sequence leaves at its next step without ending its task (see {@link SequenceOutputs#left}). */
    public void detach(Sequence s, String reason) {
        post(new Detach(s, reason));
    }

    /** The task moved to replica {@code to}: it leaves here at its next step, recording nothing more. */
    public void relinquish(String taskId, String to) {
        post(new MoveTo(taskId, to));
    }

    /** Frees sequences this replica no longer runs (abandoned by an earlier start), on the stages serving now. */
    public void releaseAbandoned(List<String> stageIds) {
        post(new Release(List.copyOf(stageIds)));
    }

    /** Checks every step's result from now on (see {@link StepAudit}). */
    public void audit(StepAudit audit) {
        this.audit = audit;
    }

    /** What the engine's thread last published. */
    public Load load() {
        return load;
    }

    private void post(Message m) {
        inbox.add(m);
        if (stopped) {
            drainAfterStop();
        }
    }

    private void run() {
        try {
            while (true) {
                List<String> ended = new ArrayList<>();
                updates.leaveWhenDue(ended);
                updates.giveUpStalled(ended);
                if (serving != null) {
                    release(serving.route(), ended);
                }
                resumePaused();
                fill();
                prepareMasks();
                publish();
                for (Message m = awaitMessage(); m != null; m = inbox.poll()) {
                    if (m instanceof Stop) {
                        stop();
                        return;
                    }
                    handle(m);
                }
            }
        } catch (RuntimeException | Error e) {
            log.error("the engine loop stopped", e);
            List<String> failed = new ArrayList<>();
            updates.failAll(new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.INTERNAL,
                    "internal error: the engine stopped (" + e.getClass().getSimpleName() + ")"), failed);
            if (serving != null) {
                release(serving.route(), failed);
            }
        } finally {
            stopped = true;
            drainAfterStop();
            publish();
        }
    }

    /** The next message; null once a backoff ends or a paused sequence's recovery timeout passes first. */
    private Message awaitMessage() {
        long now = System.nanoTime();
        long next = updates.nextGiveUpNanos();
        if (backoffUntilNanos > now && (scheduler.running() > 0 || scheduler.waiting() > 0)) {
            next = Math.min(next, backoffUntilNanos);
        }
        try {
            return next == Long.MAX_VALUE ? inbox.take() : inbox.poll(Math.max(1, next - now), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            return null; // nobody but close() stops this thread, and it does so with a message
        }
    }

    private void handle(Message m) {
        if (m instanceof Submit submit) {
            submit.sequences().forEach(s -> accept(s, submit.replay()));
        } else if (m instanceof Cancel cancel && scheduler.get(cancel.sequence().id()) == cancel.sequence()) {
            cancel.sequence().cancel(cancel.reason());
        } else if (m instanceof Detach detach && scheduler.get(detach.sequence().id()) == detach.sequence()) {
            detach.sequence().detach(detach.reason());
        } else if (m instanceof MoveTo move && scheduler.get(move.taskId()) != null) {
            scheduler.get(move.taskId()).moveTo(move.replica());
        } else if (m instanceof Attach attach) {
            attachNow(attach);
        } else if (m instanceof Serve serve) {
            serveNow(serve.serving());
        } else if (m instanceof Returned returned) {
            returned(returned);
        } else if (m instanceof Release release && serving != null) {
            release(serving.route(), release.stageIds());
        }
    }

    private void accept(Sequence s, boolean replay) {
        if (replay && scheduler.get(s.id()) != null) {
            scheduler.places().giveBack(s.tenant(), 1);
            s.outputs().refused(new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE, "task "
                    + s.id() + " is still leaving this coordinator: retry shortly"));
            return;
        }
        if (replay) {
            scheduler.queueReplay(s, System.nanoTime());
        } else {
            scheduler.queue(s);
        }
        s.outputs().accepted();
    }

    private void attachNow(Attach a) {
        Sequence s = scheduler.get(a.taskId());
        if (s == null || s.movedTo() != null || s.cancelled() != null) {
            a.answer().complete(null);
            return;
        }
        try {
            s.reattach();
            a.answer().complete(a.action().apply(s));
        } catch (RuntimeException e) {
            a.answer().completeExceptionally(e);
        }
    }

    private void serveNow(Serving next) {
        if (next == null || serving == null || serving.epoch() != next.epoch()) {
            scheduler.forgetCachedPrefixes(); // a stage may have lost its prefix cache meanwhile
        }
        if (next == null) {
            serving = null;
            return;
        }
        if (serving == null || !serving.stages().equals(next.stages())) {
            scheduler.pipeline(new KvBudgets(next.stages()), next.stages().size());
        }
        scheduler.prefixCaching(next.prefixCaching());
        serving = next;
        backoffUntilNanos = 0;
        failuresInARow = 0;
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
            Sequence s = c.sequence();
            s.appendInput(tokens, at, c.position(), c.numTokens());
            at += c.numTokens();
            if (c.samples() && s.decoding().constraint() != null) {
                masksDue.add(s.decoding().constraint());
            }
            slices.add(new StepInput.Slice(s.stageId(), c.position(), c.numTokens(), s.reservePositions(),
                    s.outputs().stepStarted(batch.id(), c.position(), c.numTokens(), batch.chunks().size()),
                    !c.samples(), s.greedyAlternatives(), s.layerHashes()));
        }
        Pipeline.Route route = serving.route();
        inFlight++;
        metrics.batchScheduled(slices.size(), tokens.length);
        long sent = System.nanoTime();
        StepInput input = new StepInput(batch.id(), serving.epoch(), slices, tokens);
        audit.sent(input, pipeline.submit(route, input)).whenComplete(
                (result, failure) -> post(new Returned(batch, route, result, failure, sent, System.nanoTime())));
    }

    /**
     * Computes the token masks the steps just sent will need when their logits come back (each constrained sequence's
     * grammar state is the one its token will be drawn in), while the stages compute: off the critical path.
     */
    private void prepareMasks() {
        for (TokenConstraint c : masksDue) {
            c.prepare();
        }
        masksDue.clear();
    }

    /** A micro-batch came back: its sequences are updated from what it brought, and those that ended are freed. */
    private void returned(Returned r) {
        inFlight--;
        List<String> ended = new ArrayList<>();
        if (r.failure() != null) {
            long now = System.nanoTime();
            if (updates.stepFailed(r.batch(), r.failure(), ended) && backoffUntilNanos <= now) {
                backoffUntilNanos = now + HOLD_OFF.nanos(failuresInARow++);
            }
        } else {
            failuresInARow = 0;
            updates.stepped(r.batch(), r.result(), r.returnedNanos() - r.sentNanos(), ended);
        }
        release(r.route(), ended);
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
        for (Sequence s : scheduler.sequences()) {
            if (s.paused()) {
                scheduler.resume(s);
                log.info("task {} resumes: replaying {} tokens", s.id(), s.historyLength());
            }
        }
    }

    /** Frees ended sequences on every stage of {@code route}, off the loop's thread. */
    private void release(Pipeline.Route route, List<String> ids) {
        if (route != null && !ids.isEmpty()) {
            publish(); // they no longer run here by the time a stage hears it
            List<String> batch = List.copyOf(ids);
            audit.released(batch);
            releases.execute(() -> pipeline.release(route, batch));
        }
    }

    private void publish() {
        load = new Load(scheduler.running(), scheduler.waiting(),
                (int) scheduler.sequences().stream().filter(Sequence::stalled).count(), scheduler.budgets().usage(),
                scheduler.sequences().stream().map(Sequence::id).collect(Collectors.toUnmodifiableSet()));
    }

    private static ButterflyException stopping() {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE,
                "the coordinator is shutting down: retry on another replica");
    }

    /**
     * The loop's last turn: every sequence leaves, recorded paused with its tokens so far, for a client that resumes
     * it at another replica; its caches are freed on the stages.
     */
    private void stop() {
        List<String> ids = new ArrayList<>();
        updates.leaveAll(ids);
        if (serving != null) {
            release(serving.route(), ids);
        }
    }

    /** Answers the messages nobody will take any more: submissions are refused, attachments find nothing. */
    private synchronized void drainAfterStop() {
        for (Message m = inbox.poll(); m != null; m = inbox.poll()) {
            if (m instanceof Submit submit) {
                for (Sequence s : submit.sequences()) {
                    scheduler.places().giveBack(s.tenant(), 1);
                    s.outputs().refused(stopping());
                }
            } else if (m instanceof Attach a) {
                a.answer().complete(null);
            }
        }
    }

    /** Stops the loop (see {@link #stop}) and waits for the releases it sent. */
    @Override
    public void close() {
        if (stopping) {
            return;
        }
        stopping = true;
        post(new Stop());
        try {
            loop.join(5_000);
            releases.shutdown();
            releases.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
