package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.control.LeadershipEvents;
import io.butterfly.coordinator.control.RaftStatus;
import io.butterfly.coordinator.control.ReplicaView;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.TransitionRecord;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Group commit of task events: many events become few log entries, in the order they were recorded, none lost or
 * applied twice, a submit the log could not confirm is retried, and recording never waits for the log.
 */
class GroupCommitTaskJournalTest {

    private final InMemoryControlLog log = new InMemoryControlLog();
    private final ScriptedLog control = new ScriptedLog(log);
    private final List<GroupCommitTaskJournal> journals = new ArrayList<>();

    @BeforeEach
    void ready() {
        ReadyCluster.bootstrap(log);
    }

    @AfterEach
    void close() {
        control.unblock();
        journals.forEach(GroupCommitTaskJournal::close);
        log.close();
    }

    private GroupCommitTaskJournal journal(Duration flushInterval, int maxBatch, int maxPending) {
        GroupCommitTaskJournal j = GroupCommitTaskJournal.start(control,
                new GroupCommitTaskJournal.Settings("coordinator-0", flushInterval, flushInterval,
                        maxBatch, maxPending),
                Clock.systemUTC());
        journals.add(j);
        return j;
    }

    /**
     * Seeded histories of 600 tasks (started, then finished or failed, interleaved), recorded in bursts with pauses,
     * while the log fails a fifth of the submits: some before committing, some after (a commit that timed out yet
     * committed). The entries, each retried one counted once, hold exactly the recorded events in their order; the
     * state holds every task's outcome; there are far fewer entries than events.
     */
    @Test
    void manyEventsBecomeFewEntriesInOrderWithNothingLostWhileSubmitsFail() throws Exception {
        for (long seed = 1; seed <= 4; seed++) {
            Random rnd = new Random(seed);
            control.failing(new Random(seed * 31), 0.2);
            GroupCommitTaskJournal journal = journal(Duration.ofMillis(5), 64, 100_000);
            List<TaskEvent> recorded = history(rnd, "s" + seed + "-", 600, journal.startedAtMs());
            int from = control.committed.size();
            for (int i = 0; i < recorded.size(); i++) {
                record(journal, recorded.get(i));
                if (rnd.nextInt(100) == 0) {
                    Thread.sleep(1 + rnd.nextInt(10)); // a pause: the batch waiting now goes out alone
                }
            }
            assertThat(journal.flush(Duration.ofSeconds(30))).isTrue();

            List<List<TaskEvent>> entries = control.committed.subList(from, control.committed.size());
            List<TaskEvent> logged = new ArrayList<>();
            List<TaskEvent> previous = null;
            for (List<TaskEvent> entry : entries) {
                if (!entry.equals(previous)) { // a batch committed twice: its retry after an unconfirmed commit
                    logged.addAll(entry);
                }
                previous = entry;
            }
            assertThat(logged).as("seed %d: the log holds every event once, in order", seed).isEqualTo(recorded);
            assertThat(control.failures.get()).as("seed %d: submits failed and were retried", seed).isPositive();
            assertThat(entries.size()).as("seed %d: %d events", seed, recorded.size()).isLessThan(recorded.size() / 8);
            assertOutcomes(recorded, log.state());
            assertThat(log.state().system()).isEqualTo(SystemState.READY);
            assertThat(journal.dropped()).isZero();
            control.failing(null, 0);
        }
    }

    /** Eight threads recording at once: every task's outcome arrives (800 tasks: the state keeps 1000 finished). */
    @Test
    void concurrentRecordersLoseNothing() throws Exception {
        GroupCommitTaskJournal journal = journal(Duration.ofMillis(20), 256, 100_000);
        List<TaskEvent> all = new CopyOnWriteArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            Random rnd = new Random(t);
            String prefix = "r" + t + "-";
            Thread thread = new Thread(() -> {
                List<TaskEvent> mine = history(rnd, prefix, 100, journal.startedAtMs());
                mine.forEach(e -> record(journal, e));
                all.addAll(mine);
            });
            thread.start();
            threads.add(thread);
        }
        for (Thread t : threads) {
            t.join();
        }
        assertThat(journal.flush(Duration.ofSeconds(30))).isTrue();
        assertThat(all).hasSize(8 * 100 * 2);
        assertOutcomes(all, log.state());
        assertThat(control.committed.size()).isLessThan(all.size() / 8);
    }

    /**
     * Tokens are recorded one at a time but logged as one progress event per task and entry: three tasks' tokens,
     * interleaved, over several flushes, all arrive in order, in a few events.
     */
    @Test
    void tokensBecomeOneProgressEventPerTaskAndEntry() throws Exception {
        GroupCommitTaskJournal journal = journal(Duration.ofHours(1), 256, 1_000);
        List<String> tasks = List.of("a", "b", "c");
        tasks.forEach(id -> journal.started(id, TestRequests.prompt(2), 0));
        int tokens = 0;
        for (int flush = 0; flush < 3; flush++) {
            for (int i = 0; i < 10; i++, tokens++) {
                for (String id : tasks) {
                    journal.progressed(id, tokens, new TaskEvent.Token(100 + tokens, -0.5, List.of()), tokens);
                }
            }
            assertThat(journal.flush(Duration.ofSeconds(10))).isTrue();
        }
        List<Long> expected = java.util.stream.LongStream.range(100, 130).boxed().toList();
        for (String id : tasks) {
            assertThat(log.state().tasks().get(id).tokenIds()).as(id).isEqualTo(expected);
        }
        long progressEvents = control.committed.stream().flatMap(List::stream)
                .filter(e -> e instanceof TaskEvent.Progressed).count();
        assertThat(progressEvents).as("one per task and entry").isEqualTo(3 * 3);
        assertThat(journal.backlog()).isZero();
    }

    /**
     * Tokens wait the progress interval (here an hour), a task's start and end only the flush interval, and they take
     * the tokens queued before them along (order is kept).
     */
    @Test
    void tokensWaitTheProgressIntervalAndAnEndTakesThemAlong() throws Exception {
        GroupCommitTaskJournal journal = GroupCommitTaskJournal.start(control,
                new GroupCommitTaskJournal.Settings("coordinator-0", Duration.ofMillis(10), Duration.ofHours(1), 256,
                        1_000), Clock.systemUTC());
        journals.add(journal);
        journal.started("t", TestRequests.prompt(2), 0);
        await().atMost(Duration.ofSeconds(10)).until(() -> !journal.pending("t"));
        for (int i = 0; i < 5; i++) {
            journal.progressed("t", i, new TaskEvent.Token(100 + i, -0.5, List.of()), i);
        }
        Thread.sleep(300);
        assertThat(journal.pending("t")).as("tokens wait their interval").isTrue();
        assertThat(log.state().tasks().get("t").tokenIds()).isEmpty();
        journal.finished("t", List.of(100L, 101L, 102L, 103L, 104L), "length", 5);
        await().atMost(Duration.ofSeconds(10)).until(() -> !journal.pending("t"));
        assertThat(control.committed).hasSize(2);
        assertThat(control.committed.get(1)).hasSize(2).first().isInstanceOf(TaskEvent.Progressed.class);
        assertThat(log.state().tasks().get("t").tokenIds()).containsExactly(100L, 101L, 102L, 103L, 104L);
    }

    /** A full batch goes at once; fewer wait for the interval (here an hour) or a flush. */
    @Test
    void aFullBatchIsCommittedWithoutWaitingForTheInterval() throws Exception {
        GroupCommitTaskJournal journal = journal(Duration.ofHours(1), 10, 1_000);
        for (int i = 0; i < 25; i++) {
            journal.started("t" + i, TestRequests.prompt(1), i);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> !journal.pending("t19"));
        assertThat(log.state().tasks()).hasSize(20);
        assertThat(control.committed).hasSize(2).allSatisfy(entry -> assertThat(entry).hasSize(10));
        assertThat(journal.pending("t20")).isTrue();
        assertThat(journal.flush(Duration.ofSeconds(10))).isTrue();
        assertThat(log.state().tasks()).hasSize(25);
        assertThat(control.committed).hasSize(3);
    }

    /** A request's thread never waits for the log: thousands of events are taken while a commit hangs. */
    @Test
    void recordingNeverWaitsForTheLog() throws Exception {
        GroupCommitTaskJournal journal = journal(Duration.ZERO, 256, 100_000);
        control.block();
        journal.started("first", TestRequests.prompt(1), 0);
        await().atMost(Duration.ofSeconds(10)).until(() -> control.submits.get() == 1);
        for (int i = 0; i < 10_000; i++) {
            journal.started("t" + i, TestRequests.prompt(1), i);
            journal.finished("t" + i, List.of(1L), "stop", i);
        }
        assertThat(journal.pending("t9999")).isTrue();
        assertThat(log.state().tasks()).isEmpty();
        control.unblock();
        assertThat(journal.flush(Duration.ofSeconds(30))).isTrue();
        assertThat(log.state().tasks().get("t9999").state()).isEqualTo(TaskRecord.State.COMPLETED);
    }

    /** A batch the reducer refuses is final (so on every replica): it is dropped, and later events still recorded. */
    @Test
    void aRefusedBatchIsDroppedAndTheJournalGoesOn() throws Exception {
        GroupCommitTaskJournal journal = journal(Duration.ZERO, 256, 1_000);
        control.refuseNext();
        journal.started("refused", TestRequests.prompt(1), 0);
        assertThat(journal.flush(Duration.ofSeconds(10))).isTrue();
        journal.started("next", TestRequests.prompt(1), 1);
        assertThat(journal.flush(Duration.ofSeconds(10))).isTrue();
        assertThat(log.state().tasks()).containsOnlyKeys("next");
        assertThat(journal.pending("refused")).isFalse();
    }

    /**
     * While the log cannot commit at all, at most max-pending events wait (the rest are dropped and counted), and
     * those are committed in order once it can again.
     */
    @Test
    void anOutageHoldsAtMostMaxPendingEvents() throws Exception {
        control.failing(new Random(1), 1.0);
        GroupCommitTaskJournal journal = journal(Duration.ZERO, 16, 100);
        for (int i = 0; i < 150; i++) {
            journal.started("t" + i, TestRequests.prompt(1), i);
        }
        await().atMost(Duration.ofSeconds(10)).until(() -> control.failures.get() >= 3); // retried, with backoff
        assertThat(journal.dropped()).isBetween(34L, 50L); // 100 queued, plus the batch being retried
        assertThat(journal.backlog()).as("what waits, the gauge operators watch").isEqualTo(150 - journal.dropped());
        control.failing(null, 0);
        assertThat(journal.flush(Duration.ofSeconds(30))).isTrue();
        assertThat(journal.backlog()).isZero();
        // Which of the later ones were dropped depends on when the flusher took its batch out of the queue (each
        // batch taken makes room): the first max-pending are always kept, and what is kept is committed in order.
        int kept = (int) (150 - journal.dropped());
        List<Integer> committed = log.state().tasks().keySet().stream().map(id -> Integer.parseInt(id.substring(1))).toList();
        assertThat(committed).as("what was kept, in order").hasSize(kept).isSorted()
                .containsAll(java.util.stream.IntStream.range(0, 100).boxed().toList());
    }

    /** Closing commits what is queued rather than losing it; what comes after is dropped. */
    @Test
    void closingCommitsWhatIsQueued() {
        GroupCommitTaskJournal journal = journal(Duration.ofHours(1), 256, 1_000);
        journal.started("t1", TestRequests.prompt(1), 0);
        journal.finished("t1", List.of(4L), "length", 1);
        journal.close();
        assertThat(log.state().tasks().get("t1").state()).isEqualTo(TaskRecord.State.COMPLETED);
        journal.started("late", TestRequests.prompt(1), 2);
        assertThat(journal.dropped()).isEqualTo(1);
    }

    private static void record(GroupCommitTaskJournal journal, TaskEvent e) {
        if (e instanceof TaskEvent.Started s) {
            journal.started(s.taskId(), s.request(), s.atMs());
        } else if (e instanceof TaskEvent.Finished f) {
            journal.finished(f.taskId(), f.tokenIds(), f.finishReason(), f.atMs());
        } else {
            journal.failed(e.taskId(), ((TaskEvent.Failed) e).error(), e.atMs());
        }
    }

    /** Each of {@code tasks} tasks starts and then finishes (with its tokens) or fails; the tasks interleave. */
    private static List<TaskEvent> history(Random rnd, String prefix, int tasks, long journalStartedAtMs) {
        List<List<TaskEvent>> perTask = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            String id = prefix + i;
            int prompt = 1 + rnd.nextInt(100);
            perTask.add(new ArrayList<>(List.of(new TaskEvent.Started(id, prompt, TestRequests.prompt(prompt), i),
                    rnd.nextInt(5) == 0 ? new TaskEvent.Failed(id, "the client closed the stream", "coordinator-0",
                            journalStartedAtMs, i + 1)
                            : new TaskEvent.Finished(id, rnd.longs(1 + rnd.nextInt(20), 0, 512).boxed().toList(),
                            rnd.nextBoolean() ? "stop" : "length", i + 1))));
        }
        List<TaskEvent> out = new ArrayList<>();
        while (!perTask.isEmpty()) {
            int k = rnd.nextInt(Math.min(perTask.size(), 8)); // a few tasks in flight at a time
            out.add(perTask.get(k).remove(0));
            perTask.removeIf(List::isEmpty);
        }
        return out;
    }

    private static void assertOutcomes(List<TaskEvent> recorded, ClusterState state) {
        for (TaskEvent e : recorded) {
            TaskRecord t = state.tasks().get(e.taskId());
            assertThat(t).as(e.taskId()).isNotNull();
            assertThat(t.owner()).isEqualTo("coordinator-0");
            if (e instanceof TaskEvent.Started s) {
                assertThat(t.promptTokens()).isEqualTo(s.promptTokens());
                assertThat(t.createdAtMs()).isEqualTo(s.atMs());
            } else if (e instanceof TaskEvent.Finished f) {
                assertThat(t.state()).isEqualTo(TaskRecord.State.COMPLETED);
                assertThat(t.tokenIds()).isEqualTo(f.tokenIds());
                assertThat(t.finishReason()).isEqualTo(f.finishReason());
            } else {
                assertThat(t.state()).isEqualTo(TaskRecord.State.FAILED);
                assertThat(t.error()).isEqualTo(((TaskEvent.Failed) e).error());
            }
        }
    }

    /**
     * The in-memory log behind a scripted front: it notes each committed batch of task events, and on demand fails
     * submits (before or after committing them), refuses one, or holds submits until released.
     */
    private static final class ScriptedLog implements ControlLog {
        private final InMemoryControlLog log;
        final List<List<TaskEvent>> committed = new CopyOnWriteArrayList<>();
        final AtomicInteger failures = new AtomicInteger();
        final AtomicInteger submits = new AtomicInteger();
        private volatile Random failing;
        private volatile double failRate;
        private volatile boolean refuseNext;
        private volatile CountDownLatch gate = new CountDownLatch(0);

        ScriptedLog(InMemoryControlLog log) {
            this.log = log;
        }

        void failing(Random rnd, double rate) {
            failing = rnd;
            failRate = rate;
        }

        void refuseNext() {
            refuseNext = true;
        }

        void block() {
            gate = new CountDownLatch(1);
        }

        void unblock() {
            gate.countDown();
        }

        @Override
        public ClusterState submit(ClusterCommand command) {
            submits.incrementAndGet();
            try {
                if (!gate.await(60, TimeUnit.SECONDS)) {
                    throw new AssertionError("submit held for a minute");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new ControlLogUnavailableException("interrupted", e);
            }
            if (refuseNext) {
                refuseNext = false;
                throw new IllegalTransitionException("refused for the test");
            }
            Random rnd = failing;
            boolean fail = rnd != null && rnd.nextDouble() < failRate;
            boolean committedAnyway = fail && rnd.nextBoolean();
            if (fail && !committedAnyway) {
                failures.incrementAndGet();
                throw new ControlLogUnavailableException("no leader (scripted)", null);
            }
            ClusterState after = log.submit(command);
            if (command instanceof ClusterCommand.TasksRecorded t) {
                committed.add(t.events());
            }
            if (committedAnyway) {
                failures.incrementAndGet();
                throw new ControlLogUnavailableException("committed, but not confirmed in time (scripted)", null);
            }
            return after;
        }

        @Override
        public ClusterState state() {
            return log.state();
        }

        @Override
        public void onApplied(AppliedListener listener) {
            log.onApplied(listener);
        }

        @Override
        public List<TransitionRecord> transitions(int limit) {
            return log.transitions(limit);
        }

        @Override
        public LeadershipEvents leadership() {
            return log.leadership();
        }

        @Override
        public RaftStatus raftStatus() {
            return log.raftStatus();
        }

        @Override
        public List<ReplicaView> replicaViews() {
            return log.replicaViews();
        }
    }
}
