package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.statemachine.SystemState;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Tasks recorded in batches (ClusterCommand.TasksRecorded): each event applies once, and the system stays READY. */
class TasksRecordedTest {

    private static final String REPLICA = "coordinator-0";
    private static final long REPLICA_STARTED = 500;

    private static ClusterCommand.TasksRecorded batch(long atMs, TaskEvent... events) {
        return new ClusterCommand.TasksRecorded(REPLICA, REPLICA_STARTED, List.of(events), atMs);
    }

    private static TaskEvent started(String id, long at) {
        return new TaskEvent.Started(id, 5, at);
    }

    private static TaskEvent finished(String id, long at) {
        return new TaskEvent.Finished(id, List.of(11L, 12L, 2L), "stop", at);
    }

    private static TaskEvent failed(String id, long at) {
        return new TaskEvent.Failed(id, "boom", at);
    }

    @Test
    void tasksStartAndEndInOrderWhileTheSystemStaysReady() {
        Fixtures f = Fixtures.ready();
        String serving = f.state().statusMessage();
        f.apply(batch(160, started("t1", 100), started("t2", 101), finished("t1", 150)));
        assertEquals(SystemState.READY, f.state().system());
        assertEquals(serving, f.state().statusMessage());
        TaskRecord t1 = f.state().tasks().get("t1");
        assertEquals(TaskRecord.State.COMPLETED, t1.state());
        assertEquals(List.of(11L, 12L, 2L), t1.tokenIds());
        assertEquals(3, t1.generatedTokens());
        assertEquals("stop", t1.finishReason());
        assertEquals(5, t1.promptTokens());
        assertEquals(100, t1.createdAtMs()); // the events' own times, not the batch's
        assertEquals(150, t1.updatedAtMs());
        assertEquals(REPLICA, t1.owner());
        assertEquals(REPLICA_STARTED, t1.ownerStartedAtMs());
        TaskRecord t2 = f.state().tasks().get("t2");
        assertEquals(TaskRecord.State.EXECUTING, t2.state());
        assertTrue(t2.ownedBy(REPLICA, REPLICA_STARTED));
        assertEquals(1, f.state().inFlightTasks());

        f.apply(batch(180, failed("t2", 170)));
        assertEquals(TaskRecord.State.FAILED, f.state().tasks().get("t2").state());
        assertEquals("boom", f.state().tasks().get("t2").error());
        assertEquals(170, f.state().tasks().get("t2").updatedAtMs());
        assertEquals(SystemState.READY, f.state().system());
    }

    /** OrphanedTasks and the task's runner may both record an end: the first one committed stands. */
    @Test
    void theFirstRecordedOutcomeStandsAndAStartIsRecordedOnce() {
        Fixtures f = Fixtures.ready().apply(batch(110, started("t1", 100), finished("t1", 105)));
        TaskRecord done = f.state().tasks().get("t1");
        f.apply(batch(130, failed("t1", 120), started("t1", 121), finished("t1", 122)));
        assertEquals(done, f.state().tasks().get("t1"));
    }

    /** Never started in the log (its start was dropped) or ended and pruned long ago: nothing to end. */
    @Test
    void anOutcomeOfATaskTheStateDoesNotHoldChangesNothing() {
        Fixtures f = Fixtures.ready();
        ClusterState before = f.state();
        f.apply(batch(110, finished("ghost", 100), failed("other", 101)));
        assertEquals(before.tasks(), f.state().tasks());
        assertEquals(before.system(), f.state().system());
    }

    /**
     * A replica admits work by its own view of the state, which may lag: what it started is a fact to record whatever
     * the system became since. Only a TERMINATED system refuses (as it refuses every command).
     */
    @Test
    void eventsAreRecordedWhateverTheSystemStateButTerminated() {
        Fixtures f = Fixtures.ready()
                .apply(batch(100, started("t1", 99)))
                .apply(new ClusterCommand.LoadFailed("w1", 1, "OOM", "x", 101));
        assertEquals(SystemState.DEGRADED, f.state().system());
        f.apply(batch(103, started("t2", 102), failed("t1", 102)));
        assertEquals(SystemState.DEGRADED, f.state().system());
        assertEquals(TaskRecord.State.EXECUTING, f.state().tasks().get("t2").state());
        assertEquals(TaskRecord.State.FAILED, f.state().tasks().get("t1").state());

        f.apply(new ClusterCommand.Shutdown("operator", 104)).apply(batch(106, finished("t2", 105)));
        assertEquals(TaskRecord.State.COMPLETED, f.state().tasks().get("t2").state());
        f.apply(new ClusterCommand.CleanupCompleted(107));
        ClusterState terminated = f.state();
        assertThrows(IllegalTransitionException.class,
                () -> ClusterReducer.apply(terminated, batch(109, started("t3", 108)), f.nextIndex()));
    }

    /** A log written before batches may hold the system COMPUTING: the batch that ends its last task leaves it. */
    @Test
    void aSystemComputingForATaskSubmittedAloneReturnsToReadyWhenABatchEndsItsLastTask() {
        Fixtures f = Fixtures.ready().apply(new ClusterCommand.TaskSubmitted("old", 3, REPLICA, REPLICA_STARTED, 100));
        assertEquals(SystemState.COMPUTING, f.state().system());
        f.apply(batch(102, started("new", 101)));
        assertEquals(SystemState.COMPUTING, f.state().system());
        f.apply(batch(104, finished("old", 103)));
        assertEquals(SystemState.COMPUTING, f.state().system()); // "new" still runs
        f.apply(batch(106, finished("new", 105)));
        assertEquals(SystemState.READY, f.state().system());
        assertTrue(f.state().statusMessage().startsWith("serving model tiny"), f.state().statusMessage());
    }

    /**
     * Idempotent on replay: seeded random event histories of 40 tasks, cut into batches, each batch applied once or,
     * at random, twice in a row (a commit that timed out yet committed, then retried): the same tasks either way.
     */
    @Test
    void aBatchAppliedAgainChangesNothing() {
        int repeats = 0;
        for (long seed = 1; seed <= 50; seed++) {
            Random rnd = new Random(seed);
            List<List<TaskEvent>> batches = batches(rnd, history(rnd, 40));
            Fixtures once = Fixtures.ready();
            Fixtures retried = Fixtures.ready();
            for (int i = 0; i < batches.size(); i++) {
                ClusterCommand.TasksRecorded b = new ClusterCommand.TasksRecorded(REPLICA, REPLICA_STARTED,
                        batches.get(i), 1_000 + i);
                once.apply(b);
                retried.apply(b);
                if (rnd.nextInt(3) == 0) {
                    ClusterState before = retried.state();
                    retried.apply(b);
                    assertEquals(before.tasks(), retried.state().tasks(), "seed " + seed + ", batch " + i);
                    repeats++;
                }
            }
            assertEquals(once.state().tasks(), retried.state().tasks(), "seed " + seed);
            assertEquals(List.copyOf(once.state().tasks().keySet()), List.copyOf(retried.state().tasks().keySet()));
            assertEquals(SystemState.READY, retried.state().system());
            assertEquals(expectedOutcomes(batches), outcomes(retried.state()), "seed " + seed);
        }
        assertTrue(repeats > 100, "too few batches applied again: " + repeats);
    }

    /**
     * A running task's progress, pauses and resumption are its owner's to record, in order: a progress applied again
     * adds nothing and one after a lost one is not applied, so the recorded tokens stay the generation's first.
     */
    @Test
    void progressPausesAndResumptionsBuildARecordAnotherReplicaCanResumeFrom() {
        TaskRequest request = TaskRequest.of(List.of(5L, 6L), 8, 0.8, 1, 0, 7, 0, false, List.of(), null);
        Fixtures f = Fixtures.ready().apply(batch(1, new TaskEvent.Started("t", 2, request, 1)));
        f.apply(batch(3, progressed("t", 0, 11, 12), progressed("t", 2, 13)));
        f.apply(batch(4, progressed("t", 1, 12, 13))); // applied again, in part: nothing new
        f.apply(batch(5, progressed("t", 5, 99))); // after a lost one: not applied
        TaskRecord t = f.state().tasks().get("t");
        assertEquals(List.of(11L, 12L, 13L), t.tokenIds());
        assertEquals(List.of(-1.0, -1.0, -1.0), t.logprobs());
        assertEquals(3, t.generatedTokens());
        assertEquals(request, t.request());

        f.apply(batch(6, new TaskEvent.Paused("t", "stage w2 is gone", 6)));
        assertTrue(f.state().tasks().get("t").paused());
        assertEquals("stage w2 is gone", f.state().tasks().get("t").pauseReason());
        f.apply(batch(7, new TaskEvent.Resumed("t", 7), progressed("t", 3, 14)));
        assertFalse(f.state().tasks().get("t").paused());
        f.apply(batch(9, finished("t", 8)));
        TaskRecord ended = f.state().tasks().get("t");
        assertEquals(TaskRecord.State.COMPLETED, ended.state());
        assertEquals(List.of(), ended.request().promptTokenIds(), "an ended task keeps no prompt");
        assertEquals(request.promptSha256(), ended.request().promptSha256());
    }

    /**
     * A task moves to the replica that adopts it from its current owner, once: a second adoption from the same owner,
     * and anything the former owner records afterwards (progress, outcome, a failure as its own), does not apply.
     */
    @Test
    void aTaskMovesOnceToTheReplicaThatAdoptsItAndItsFormerOwnerCanNoLongerMoveIt() {
        Fixtures f = Fixtures.ready().apply(batch(1, started("t", 0), progressed("t", 0, 11)));
        f.apply(new ClusterCommand.TasksRecorded("coordinator-1", 900,
                List.of(new TaskEvent.Adopted("t", REPLICA, REPLICA_STARTED, 2)), 2));
        f.apply(new ClusterCommand.TasksRecorded("coordinator-2", 900,
                List.of(new TaskEvent.Adopted("t", REPLICA, REPLICA_STARTED, 3)), 3));
        assertTrue(f.state().tasks().get("t").isOwner("coordinator-1", 900));
        f.apply(batch(5, progressed("t", 1, 12), new TaskEvent.Failed("t", "gave up", REPLICA, REPLICA_STARTED, 4),
                finished("t", 5)));
        TaskRecord t = f.state().tasks().get("t");
        assertEquals(TaskRecord.State.EXECUTING, t.state());
        assertEquals(List.of(11L), t.tokenIds());
        f.apply(new ClusterCommand.TasksRecorded("coordinator-1", 900,
                List.of(progressed("t", 1, 12), new TaskEvent.Finished("t", List.of(11L, 12L), "length", 6)), 6));
        assertEquals(TaskRecord.State.COMPLETED, f.state().tasks().get("t").state());
    }

    /** A start under an idempotency key another task holds is not recorded: that task is the request's. */
    @Test
    void aStartUnderAKeyAnotherTaskHoldsIsNotRecorded() {
        TaskRequest keyed = TaskRequest.of(List.of(5L), 8, 0, 1, 0, 0, 0, false, List.of(), "k-1");
        Fixtures f = Fixtures.ready().apply(batch(1, new TaskEvent.Started("first", 1, keyed, 1)));
        f.apply(new ClusterCommand.TasksRecorded("coordinator-1", 900,
                List.of(new TaskEvent.Started("second", 1, keyed, 2)), 2));
        assertNull(f.state().tasks().get("second"));
        assertEquals("first", f.state().taskWithKey("k-1").taskId());
        f.apply(batch(3, finished("first", 3)));
        assertEquals("first", f.state().taskWithKey("k-1").taskId(), "an ended task keeps its key");
    }

    private static TaskEvent progressed(String id, int from, long... tokens) {
        return new TaskEvent.Progressed(id, from, java.util.Arrays.stream(tokens)
                .mapToObj(t -> new TaskEvent.Token(t, -1.0, List.of())).toList(), from);
    }

    /** Running tasks are never pruned; the oldest finished ones beyond the bound are, batch or not. */
    @Test
    void finishedTasksAreBoundedAcrossBatches() {
        Fixtures f = Fixtures.ready().apply(batch(1, started("open", 0)));
        int n = ClusterReducer.MAX_FINISHED_TASKS + 300;
        for (int i = 0; i < n; i += 100) {
            List<TaskEvent> events = new ArrayList<>();
            for (int k = i; k < i + 100; k++) {
                events.add(started("t" + k, k));
                events.add(finished("t" + k, k));
            }
            f.apply(new ClusterCommand.TasksRecorded(REPLICA, REPLICA_STARTED, events, i));
        }
        assertEquals(ClusterReducer.MAX_FINISHED_TASKS + 1, f.state().tasks().size());
        assertEquals(TaskRecord.State.EXECUTING, f.state().tasks().get("open").state());
        assertNull(f.state().tasks().get("t0"));
        assertTrue(f.state().tasks().containsKey("t" + (n - 1)));
    }

    /** Each task starts, then (usually) finishes or fails, its events interleaved with other tasks' in time order. */
    private static List<TaskEvent> history(Random rnd, int tasks) {
        List<List<TaskEvent>> perTask = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            List<TaskEvent> events = new ArrayList<>(List.of(started("t" + i, 0)));
            switch (rnd.nextInt(4)) {
                case 0 -> events.add(failed("t" + i, 0));
                case 1 -> { } // still running
                default -> events.add(new TaskEvent.Finished("t" + i,
                        rnd.longs(rnd.nextInt(6), 0, 512).boxed().toList(), "length", 0));
            }
            perTask.add(events);
        }
        List<TaskEvent> out = new ArrayList<>();
        while (!perTask.isEmpty()) {
            List<TaskEvent> next = perTask.get(rnd.nextInt(perTask.size()));
            out.add(next.remove(0));
            perTask.removeIf(List::isEmpty);
        }
        return out;
    }

    private static List<List<TaskEvent>> batches(Random rnd, List<TaskEvent> history) {
        List<List<TaskEvent>> out = new ArrayList<>();
        for (int i = 0; i < history.size(); ) {
            int size = 1 + rnd.nextInt(8);
            out.add(history.subList(i, Math.min(history.size(), i + size)));
            i += size;
        }
        return out;
    }

    /** Each task's state and tokens, as its events say. */
    private static Map<String, String> expectedOutcomes(List<List<TaskEvent>> batches) {
        Map<String, String> out = new LinkedHashMap<>();
        batches.stream().flatMap(List::stream).forEach(e -> out.put(e.taskId(),
                e instanceof TaskEvent.Finished fin ? "COMPLETED " + fin.tokenIds()
                        : e instanceof TaskEvent.Failed ? "FAILED []" : "EXECUTING []"));
        return out;
    }

    private static Map<String, String> outcomes(ClusterState s) {
        Map<String, String> out = new LinkedHashMap<>();
        s.tasks().values().forEach(t -> out.put(t.taskId(), t.state() + " " + t.tokenIds()));
        return out;
    }
}
