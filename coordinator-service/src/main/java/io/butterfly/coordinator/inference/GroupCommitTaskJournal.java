package io.butterfly.coordinator.inference;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.error.Backoff;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRequest;
import io.butterfly.coordinator.control.ControlLog;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link TaskJournal} on the control log, by group commit: events are queued, and one flusher thread commits them
 * as one {@link ClusterCommand.TasksRecorded} entry per batch, once an event has waited its interval ({@code
 * flushInterval} for a task's start, pause or end, the longer {@code progressInterval} for its tokens) or as soon as
 * {@code maxBatch} are queued, whichever comes first, one commit at a time. So the log takes a few entries a second
 * however many requests run, a lone request's tokens do not cost an entry each, and a request never waits for a
 * quorum. Order is kept: batches are committed in the order their events were recorded, and a batch the log could
 * not commit is retried (with backoff) before any later one. Only a refusal by the reducer (the same on every
 * replica) drops a batch; while the log cannot commit at all, at most {@code maxPending} events wait, and further
 * ones are dropped and counted, so an outage costs memory only up to a bound. Closing commits what is queued (once:
 * a log that is gone by then is not waited for).
 */
public final class GroupCommitTaskJournal implements TaskJournal, AutoCloseable {

    /**
     * @param replicaId        this replica: the owner of the tasks it records started
     * @param flushInterval    how long a task's start, pause or end waits for other events to share its entry
     * @param progressInterval how long a task's tokens wait (they are only needed to carry the task on elsewhere,
     *                         which recomputes any not yet recorded alike; an entry per token of a lone request cost
     *                         its coordinator a third of its CPU)
     * @param maxBatch         the most events in one entry (a finished event carries its tokens: this bounds an entry)
     * @param maxPending       the most events waiting while the log cannot commit; more are dropped
     */
    public record Settings(String replicaId, Duration flushInterval, Duration progressInterval, int maxBatch,
                           int maxPending) {
        public Settings {
            if (flushInterval.isNegative() || progressInterval.isNegative()) {
                throw new IllegalArgumentException("task-journal flush-interval and progress-interval must not be"
                        + " negative: " + flushInterval + ", " + progressInterval);
            }
            if (maxBatch < 1 || maxPending < maxBatch) {
                throw new IllegalArgumentException("task-journal needs 1 <= max-batch <= max-pending, got max-batch "
                        + maxBatch + " and max-pending " + maxPending);
            }
        }
    }

    private static final Logger log = LoggerFactory.getLogger(GroupCommitTaskJournal.class);
    private static final Backoff COMMIT_RETRY = Backoff.exponential(Duration.ofMillis(50), Duration.ofSeconds(2));

    private final ControlLog control;
    private final Settings settings;
    private final Clock clock;
    /** When this replica's process began recording: a task of an earlier start has lost its runner. */
    private final long startedAtMs;
    private final Thread flusher;

    // Guarded by this.
    private final ArrayDeque<Queued> queued = new ArrayDeque<>();
    /** Each task's progress still queued, which its next tokens join instead of queuing an event each. */
    private final Map<String, Queued> openProgress = new HashMap<>();
    /** Events of each task that are queued or being committed. */
    private final Map<String, Integer> unsettled = new HashMap<>();
    /** When the queued events are due: the earliest of their arrival plus their interval. */
    private long dueNanos;
    /** Events accepted so far; they settle (committed, or given up) in the same order. */
    private long accepted;
    private long settled;
    /** A {@link #flush} waits until {@code settled} reaches this; batches go without waiting until then. */
    private long flushTarget;
    private long dropped;
    private boolean closing;

    private GroupCommitTaskJournal(ControlLog control, Settings settings, Clock clock) {
        this.control = control;
        this.settings = settings;
        this.clock = clock;
        this.startedAtMs = clock.millis();
        this.flusher = DaemonThreads.named("task-journal").newThread(this::flushUntilClosed);
    }

    /** A journal of replica {@code settings.replicaId()} whose flusher runs. */
    public static GroupCommitTaskJournal start(ControlLog control, Settings settings, Clock clock) {
        GroupCommitTaskJournal journal = new GroupCommitTaskJournal(control, settings, clock);
        journal.flusher.start();
        return journal;
    }

    @Override
    public String replicaId() {
        return settings.replicaId();
    }

    /** When this replica (this process) began recording; it is logged as its tasks' owner start. */
    @Override
    public long startedAtMs() {
        return startedAtMs;
    }

    @Override
    public void started(String taskId, TaskRequest request, long atMs) {
        record(new TaskEvent.Started(taskId, request.promptTokenIds().size(), request, atMs));
    }

    /** Joins the task's queued progress when it has some (one event per task and batch, not one per token). */
    @Override
    public synchronized void progressed(String taskId, int index, TaskEvent.Token token, long atMs) {
        Queued open = openProgress.get(taskId);
        if (open != null && open.fromIndex + open.tokens.size() == index) {
            open.tokens.add(token);
            open.atMs = atMs;
            return;
        }
        Queued q = new Queued(null, taskId, index, atMs);
        q.tokens.add(token);
        if (enqueue(q, "progress", settings.progressInterval())) {
            openProgress.put(taskId, q);
        }
    }

    @Override
    public void paused(String taskId, String reason, long atMs) {
        record(new TaskEvent.Paused(taskId, reason, atMs));
    }

    @Override
    public void resumed(String taskId, long atMs) {
        record(new TaskEvent.Resumed(taskId, atMs));
    }

    @Override
    public void finished(String taskId, List<Long> tokenIds, String finishReason, long atMs) {
        record(new TaskEvent.Finished(taskId, tokenIds, finishReason, atMs));
    }

    @Override
    public void failed(String taskId, String error, long atMs) {
        record(new TaskEvent.Failed(taskId, error, settings.replicaId(), startedAtMs, atMs));
    }

    /** Fails a task as owned by {@code owner}'s process started at {@code ownerStartedAtMs} (one whose runner is gone). */
    public void failedAs(String taskId, String error, String owner, long ownerStartedAtMs, long atMs) {
        record(new TaskEvent.Failed(taskId, error, owner, ownerStartedAtMs, atMs));
    }

    /**
     * Commits {@code event} now, alone, after what this replica queued before it is committed, and answers the state
     * once it applied: for the few events a request waits on (taking a task over, an idempotent start).
     */
    @Override
    public ClusterState commitNow(TaskEvent event) {
        try {
            flush(Duration.ofSeconds(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return control.submit(new ClusterCommand.TasksRecorded(settings.replicaId(), startedAtMs, List.of(event),
                clock.millis()));
    }

    /** Whether an event of {@code taskId} is on its way to the log (queued or being committed). */
    public synchronized boolean pending(String taskId) {
        return unsettled.containsKey(taskId);
    }

    /** Events accepted and not yet committed (or given up): the journal's backlog. */
    public synchronized long backlog() {
        return accepted - settled;
    }

    /** Events dropped so far because {@code maxPending} were waiting (or the journal was closed). */
    public synchronized long dropped() {
        return dropped;
    }

    /**
     * Commits every event recorded before this call without waiting out the flush interval, and returns once they are
     * committed (or given up); false if that took longer than {@code timeout}.
     */
    @Override
    public boolean flush(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (this) {
            long target = accepted;
            flushTarget = Math.max(flushTarget, target);
            notifyAll();
            while (settled < target) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
            return true;
        }
    }

    private synchronized void record(TaskEvent event) {
        enqueue(new Queued(event, event.taskId(), 0, event.atMs()), event.getClass().getSimpleName(),
                settings.flushInterval());
    }

    /**
     * Queues an entry, due {@code interval} from now, unless the journal is closed or full (then it is dropped and
     * counted); whether it was queued.
     */
    private boolean enqueue(Queued entry, String kind, Duration interval) {
        if (closing || queued.size() >= settings.maxPending()) {
            dropped++;
            if (Long.bitCount(dropped) == 1) { // the 1st, 2nd, 4th, 8th, ... : an outage does not flood the log
                log.error("task journal: {} task events dropped so far ({} of task {}): {}", dropped, kind,
                        entry.taskId, closing ? "the journal is closed"
                                : settings.maxPending() + " events are waiting for the control log to commit them");
            }
            return false;
        }
        long due = System.nanoTime() + interval.toNanos();
        if (queued.isEmpty() || due - dueNanos < 0) {
            dueNanos = due;
            notifyAll(); // starts (or shortens) the flusher's wait for more
        }
        queued.add(entry);
        accepted++;
        unsettled.merge(entry.taskId, 1, Integer::sum);
        if (queued.size() == settings.maxBatch()) {
            notifyAll();
        }
        return true;
    }

    /** A queued event, or a task's progress that its next tokens may still join until the flusher takes it. */
    private static final class Queued {
        final TaskEvent event;
        final String taskId;
        final int fromIndex;
        final List<TaskEvent.Token> tokens = new ArrayList<>();
        long atMs;

        Queued(TaskEvent event, String taskId, int fromIndex, long atMs) {
            this.event = event;
            this.taskId = taskId;
            this.fromIndex = fromIndex;
            this.atMs = atMs;
        }

        TaskEvent event() {
            return event != null ? event : new TaskEvent.Progressed(taskId, fromIndex, tokens, atMs);
        }
    }

    private void flushUntilClosed() {
        try {
            List<TaskEvent> batch;
            while ((batch = nextBatch()) != null) {
                commit(batch);
                settle(batch);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The next batch, once it is full, due (an event waited its interval), or flushed; null once closed and empty. */
    private synchronized List<TaskEvent> nextBatch() throws InterruptedException {
        while (queued.isEmpty()) {
            if (closing) {
                return null;
            }
            wait();
        }
        for (long left = dueNanos - System.nanoTime(); left > 0 && queued.size() < settings.maxBatch()
                && flushTarget <= settled && !closing; left = dueNanos - System.nanoTime()) {
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
        List<TaskEvent> batch = new ArrayList<>(Math.min(queued.size(), settings.maxBatch()));
        while (batch.size() < settings.maxBatch() && !queued.isEmpty()) {
            Queued q = queued.poll();
            openProgress.remove(q.taskId, q); // taken: later tokens start the next progress
            batch.add(q.event());
        }
        // What is left waited during the last commit already: it is due at once (the old due time stands).
        return batch;
    }

    /** Commits one batch, retrying while the log cannot commit; a refused batch or one left at close is given up. */
    private void commit(List<TaskEvent> batch) throws InterruptedException {
        for (int attempt = 1; ; attempt++) {
            try {
                control.submit(new ClusterCommand.TasksRecorded(settings.replicaId(), startedAtMs, batch, clock.millis()));
                if (attempt > 1) {
                    log.info("task journal: {} task events committed at attempt {}", batch.size(), attempt);
                }
                return;
            } catch (IllegalTransitionException | IllegalArgumentException refused) {
                // Refused by the reducer, so on every replica alike (a TERMINATED system refuses everything): final.
                log.warn("task journal: {} task events not recorded, the control log refused them: {}", batch.size(),
                        refused.getMessage());
                return;
            } catch (RuntimeException unavailable) {
                if (isClosing()) {
                    log.warn("task journal: {} task events not recorded while this replica stops: {}", batch.size(),
                            unavailable.toString());
                    return;
                }
                if (attempt == 1) {
                    log.warn("task journal: {} task events not committed yet, retrying: {}", batch.size(),
                            unavailable.toString());
                }
                awaitClosing(COMMIT_RETRY.millis(attempt - 1));
            }
        }
    }

    private synchronized void settle(List<TaskEvent> batch) {
        for (TaskEvent e : batch) {
            unsettled.computeIfPresent(e.taskId(), (id, n) -> n == 1 ? null : n - 1);
        }
        settled += batch.size();
        notifyAll();
    }

    private synchronized boolean isClosing() {
        return closing;
    }

    /** Waits {@code millis}, or less if the journal closes meanwhile. */
    private synchronized void awaitClosing(long millis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        for (long left = deadline - System.nanoTime(); left > 0 && !closing; left = deadline - System.nanoTime()) {
            TimeUnit.NANOSECONDS.timedWait(this, left);
        }
    }

    /** Commits what is queued (one attempt per batch, at most {@code settle} long) and stops the flusher. */
    public void close(Duration settle) {
        synchronized (this) {
            closing = true;
            notifyAll();
        }
        try {
            flusher.join(settle.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        synchronized (this) {
            if (!queued.isEmpty()) {
                log.warn("task journal: {} task events not recorded: the control log did not commit them within {}",
                        queued.size(), settle);
            }
        }
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(10));
    }
}
