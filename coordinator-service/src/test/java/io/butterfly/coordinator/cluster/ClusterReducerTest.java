package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import static io.butterfly.coordinator.cluster.Fixtures.info;
import static io.butterfly.coordinator.cluster.Fixtures.twoStages;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.planning.StageAssignment;
import io.butterfly.coordinator.statemachine.PartitionState;
import io.butterfly.coordinator.statemachine.SystemState;
import io.butterfly.coordinator.statemachine.WorkerState;
import java.util.List;
import org.junit.jupiter.api.Test;

class ClusterReducerTest {

    /** Applies a command that must be refused and checks the state did not change. */
    private static <T extends IllegalTransitionException> T refused(Class<T> type, Fixtures f, ClusterCommand c) {
        ClusterState before = f.state();
        T e = assertThrows(type, () -> ClusterReducer.apply(before, c, f.nextIndex()));
        assertEquals(before, f.state());
        return e;
    }

    @Test
    void initialStateIsEmpty() {
        ClusterState s = ClusterState.initial();
        assertEquals(SystemState.UNINITIALIZED, s.system());
        assertEquals(0, s.epoch());
        assertTrue(s.nodes().isEmpty() && s.tasks().isEmpty() && s.pipeline().isEmpty());
        assertThrows(UnsupportedOperationException.class, () -> s.nodes().put("x", null));
    }

    @Test
    void bootstrapStartsFormationOnce() {
        Fixtures f = new Fixtures().apply(new ClusterCommand.Bootstrap("tiny", 3, 10));
        assertEquals(SystemState.BOOTSTRAPPING, f.state().system());
        assertEquals("tiny", f.state().modelId());
        assertEquals(3, f.state().expectedWorkers());
        assertEquals(1, f.state().lastAppliedIndex());
        refused(IllegalTransitionException.class, f, new ClusterCommand.Bootstrap("tiny", 3, 11));
    }

    @Test
    void modelResolvedPinsTheMerkleRoot() {
        ClusterState s = Fixtures.joined().state();
        assertEquals(Fixtures.ROOT, s.merkleRoot());
        Fixtures ready = Fixtures.ready();
        ready.apply(new ClusterCommand.ModelResolved("tiny", Fixtures.ROOT, 20)); // repeated: accepted, no change
        assertEquals(SystemState.READY, ready.state().system());
        refused(IllegalTransitionException.class, ready, new ClusterCommand.ModelResolved("tiny", "other", 21));
    }

    @Test
    void nodeJoinedRecordsTheNodeOnce() {
        Fixtures f = Fixtures.joined();
        NodeRecord n = f.state().nodes().get("w1");
        assertEquals(WorkerState.JOINED, n.state());
        assertEquals(PartitionState.UNLOADED, n.partition());
        assertNull(n.layerStart());
        assertEquals(List.of("w1", "w2"), List.copyOf(f.state().nodes().keySet()));
        refused(IllegalTransitionException.class, f, new ClusterCommand.NodeJoined(info("w1"), 9));
        refused(IllegalTransitionException.class, new Fixtures(), new ClusterCommand.NodeJoined(info("w1"), 9));
    }

    @Test
    void partitionsAssignedSetsEpochPipelineAndRanges() {
        ClusterState s = Fixtures.assigned().state();
        assertEquals(1, s.epoch());
        assertEquals(List.of("w1", "w2"), s.pipeline());
        NodeRecord w2 = s.nodes().get("w2");
        assertEquals(2, w2.layerStart());
        assertEquals(4, w2.layerEnd());
        assertTrue(w2.hasHead());
        assertEquals(SystemState.BOOTSTRAPPING, s.system());
    }

    @Test
    void partitionsAssignedRefusesOldEpochsAndUnknownNodes() {
        Fixtures f = Fixtures.assigned();
        refused(IllegalTransitionException.class, f, new ClusterCommand.PartitionsAssigned(1, twoStages("w1", "w2"), 9));
        refused(IllegalTransitionException.class, f, new ClusterCommand.PartitionsAssigned(0, twoStages("w1", "w2"), 9));
        refused(IllegalTransitionException.class, f, new ClusterCommand.PartitionsAssigned(2, twoStages("w1", "nope"), 9));
        refused(IllegalTransitionException.class, f, new ClusterCommand.PartitionsAssigned(2, List.of(), 9));
    }

    @Test
    void reassignmentWhileReadyDegradesUntilLoaded() {
        Fixtures f = Fixtures.ready();
        f.apply(new ClusterCommand.PartitionsAssigned(2, List.of(new StageAssignment("w2", 0, 4, true, true)), 20));
        assertEquals(SystemState.DEGRADED, f.state().system());
        assertNull(f.state().nodes().get("w1").layerStart());
        f.apply(new ClusterCommand.LoadCompleted("w2", 2, "c", 21));
        assertEquals(SystemState.DEGRADED, f.state().system()); // epoch 2's weights are not validated yet
        refused(IllegalTransitionException.class, f, Fixtures.validated(1, 22)); // stale epoch
        f.apply(Fixtures.validated(2, 22));
        assertEquals(SystemState.READY, f.state().system());
        assertEquals(List.of("w2"), f.state().pipeline());
    }

    @Test
    void loadProgressedMovesForwardOnly() {
        Fixtures f = Fixtures.assigned()
                .apply(new ClusterCommand.LoadProgressed("w1", 1, PartitionState.DOWNLOADING, 0.5, "a.safetensors", 6))
                .apply(new ClusterCommand.LoadProgressed("w1", 1, PartitionState.VALIDATING, 0.9, null, 7));
        NodeRecord n = f.state().nodes().get("w1");
        assertEquals(PartitionState.VALIDATING, n.partition());
        assertEquals(0.9, n.loadProgress());
        refused(IllegalTransitionException.class, f,
                new ClusterCommand.LoadProgressed("w1", 1, PartitionState.DOWNLOADING, 0.1, null, 8));
        refused(IllegalTransitionException.class, f,
                new ClusterCommand.LoadProgressed("w1", 1, PartitionState.IN_USE, 0.1, null, 8));
        refused(IllegalTransitionException.class, f,
                new ClusterCommand.LoadProgressed("w1", 0, PartitionState.WARMING, 0.1, null, 8));
        refused(IllegalTransitionException.class, f,
                new ClusterCommand.LoadProgressed("ghost", 1, PartitionState.WARMING, 0.1, null, 8));
    }

    @Test
    void loadCompletedOfEveryStageMakesTheSystemReady() {
        Fixtures f = Fixtures.assigned().apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", 6));
        assertEquals(SystemState.BOOTSTRAPPING, f.state().system());
        assertEquals("c1", f.state().nodes().get("w1").partitionChecksum());
        assertEquals(WorkerState.READY, f.state().nodes().get("w1").state());
        f.apply(new ClusterCommand.LoadCompleted("w2", 1, "c2", 7));
        assertEquals(SystemState.BOOTSTRAPPING, f.state().system());
        assertTrue(f.state().statusMessage().contains("cross-validating"), f.state().statusMessage());
        f.apply(Fixtures.validated(1, 8));
        assertEquals(SystemState.READY, f.state().system());
        refused(IllegalTransitionException.class, f, new ClusterCommand.LoadCompleted("w2", 0, "c2", 9));
    }

    @Test
    void readinessWaitsForTheModelManifest() {
        Fixtures f = new Fixtures()
                .apply(new ClusterCommand.Bootstrap("tiny", 1, 1))
                .apply(new ClusterCommand.NodeJoined(info("w1"), 2))
                .apply(new ClusterCommand.PartitionsAssigned(1, List.of(new StageAssignment("w1", 0, 4, true, true)), 3))
                .apply(new ClusterCommand.LoadCompleted("w1", 1, "c", 4))
                .apply(Fixtures.validated(1, 5));
        assertEquals(SystemState.BOOTSTRAPPING, f.state().system());
        f.apply(new ClusterCommand.ModelResolved("tiny", Fixtures.ROOT, 6));
        assertEquals(SystemState.READY, f.state().system());
    }

    /** The budget a worker reports with READY is replicated and outlives reassignments, failures and recoveries. */
    @Test
    void loadCompletedRecordsTheNodesKvCacheBudget() {
        Fixtures f = Fixtures.assigned()
                .apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", 2L << 30, 6))
                .apply(new ClusterCommand.LoadCompleted("w2", 1, "c2", 7)); // an entry written before budgets: unknown
        assertEquals(2L << 30, f.state().nodes().get("w1").kvCacheBudgetBytes());
        assertEquals(0, f.state().nodes().get("w2").kvCacheBudgetBytes());
        f.apply(Fixtures.validated(1, 8))
                .apply(new ClusterCommand.NodeSuspected("w1", 8, 5, "silent", 9))
                .apply(new ClusterCommand.NodeFailed("w1", 8, 9, "silent", 10))
                .apply(new ClusterCommand.NodeRecovered("w1", false, 11, 11))
                .apply(new ClusterCommand.PartitionsAssigned(2, twoStages("w2", "w1"), 12));
        assertEquals(2L << 30, f.state().nodes().get("w1").kvCacheBudgetBytes());
        // A restarted worker may have been given another budget: its next READY report says which.
        f.apply(new ClusterCommand.LoadCompleted("w1", 2, "c1", 1L << 30, 13));
        assertEquals(1L << 30, f.state().nodes().get("w1").kvCacheBudgetBytes());
        assertThrows(IllegalArgumentException.class, () -> new ClusterCommand.LoadCompleted("w1", 2, "c1", -1, 14));
    }

    @Test
    void loadFailedMarksTheNodeAndDegradesAServingSystem() {
        Fixtures boot = Fixtures.assigned().apply(new ClusterCommand.LoadFailed("w1", 1, "TIMEOUT", "no answer", 6));
        NodeRecord n = boot.state().nodes().get("w1");
        assertEquals(WorkerState.FAILED, n.state());
        assertEquals(PartitionState.FAILED, n.partition());
        assertEquals("TIMEOUT", n.failureCode());
        assertEquals(SystemState.BOOTSTRAPPING, boot.state().system());

        Fixtures ready = Fixtures.ready().apply(new ClusterCommand.LoadFailed("w2", 1, "OOM", null, 9));
        assertEquals(SystemState.DEGRADED, ready.state().system());
        assertEquals("", ready.state().nodes().get("w2").failureMessage());
        // The worker retries on its own; its reloaded weights are cross-validated, then the system is READY.
        ready.apply(new ClusterCommand.LoadCompleted("w2", 1, "c2", 10));
        assertEquals(SystemState.DEGRADED, ready.state().system());
        ready.apply(Fixtures.validated(1, 11));
        assertEquals(SystemState.READY, ready.state().system());
    }

    // Tasks logged alone (TaskSubmitted, TaskFinished, TaskFailed): no longer written, but a log or snapshot written
    // before tasks were recorded in batches (TasksRecordedTest) must replay as it did.

    @Test
    void taskSubmittedStartsComputingAndIsRefusedWhenNotReady() {
        Fixtures f = Fixtures.ready().apply(new ClusterCommand.TaskSubmitted("t1", 5, 100));
        assertEquals(SystemState.COMPUTING, f.state().system());
        TaskRecord t = f.state().tasks().get("t1");
        assertEquals(TaskRecord.State.EXECUTING, t.state());
        assertEquals(100, t.createdAtMs());
        f.apply(new ClusterCommand.TaskSubmitted("t2", 5, 101)); // batching: COMPUTING accepts more work
        refused(IllegalTransitionException.class, f, new ClusterCommand.TaskSubmitted("t1", 5, 102));
        refused(NotReadyException.class, Fixtures.assigned(), new ClusterCommand.TaskSubmitted("t3", 5, 102));
    }

    @Test
    void taskFinishedCommitsAndReturnsToReadyWhenIdle() {
        Fixtures f = Fixtures.ready()
                .apply(new ClusterCommand.TaskSubmitted("t1", 5, 100))
                .apply(new ClusterCommand.TaskSubmitted("t2", 5, 100))
                .apply(new ClusterCommand.TaskFinished("t1", java.util.List.of(11L, 12L, 13L, 14L, 15L, 16L, 2L), "stop", 150));
        assertEquals(SystemState.COMPUTING, f.state().system());
        f.apply(new ClusterCommand.TaskFinished("t2", java.util.List.of(1L, 2L, 3L), "length", 160));
        assertEquals(SystemState.READY, f.state().system());
        TaskRecord t = f.state().tasks().get("t1");
        assertEquals(TaskRecord.State.COMPLETED, t.state());
        assertEquals(7, t.generatedTokens());
        assertEquals(java.util.List.of(11L, 12L, 13L, 14L, 15L, 16L, 2L), t.tokenIds()); // the committed result
        assertEquals("stop", t.finishReason());
        assertEquals(150, t.updatedAtMs());
        refused(IllegalTransitionException.class, f, new ClusterCommand.TaskFinished("t1", java.util.List.of(9L), "stop", 170));
        refused(IllegalTransitionException.class, f, new ClusterCommand.TaskFinished("nope", java.util.List.of(7L), "stop", 170));
    }

    @Test
    void taskFailedRecordsTheError() {
        Fixtures f = Fixtures.ready()
                .apply(new ClusterCommand.TaskSubmitted("t1", 5, 100))
                .apply(new ClusterCommand.TaskFailed("t1", "worker unreachable", 120));
        assertEquals(SystemState.READY, f.state().system());
        assertEquals(TaskRecord.State.FAILED, f.state().tasks().get("t1").state());
        assertEquals("worker unreachable", f.state().tasks().get("t1").error());
        refused(IllegalTransitionException.class, f, new ClusterCommand.TaskFailed("t1", "again", 130));
    }

    /**
     * Recovery does not wait for tasks to end: READY serves while tasks run, and a task whose stage was lost fails on
     * its own (the reloaded stage refuses its next step); a task of a replica that died would otherwise hold the
     * system DEGRADED until the leader's task-timeout.
     */
    @Test
    void degradedRefusesNewWorkAndRecoversWithTasksStillOpen() {
        Fixtures f = Fixtures.ready()
                .apply(new ClusterCommand.TaskSubmitted("t1", 5, 100))
                .apply(new ClusterCommand.LoadFailed("w1", 1, "OOM", "x", 101));
        assertEquals(SystemState.DEGRADED, f.state().system());
        refused(NotReadyException.class, f, new ClusterCommand.TaskSubmitted("t2", 5, 102));
        f.apply(new ClusterCommand.LoadCompleted("w1", 1, "c1", 103)).apply(Fixtures.validated(1, 104));
        assertEquals(SystemState.READY, f.state().system());
        assertEquals(1, f.state().inFlightTasks());
        f.apply(new ClusterCommand.TaskFailed("t1", "stage lost", 105));
        assertEquals(SystemState.READY, f.state().system());
        assertEquals(TaskRecord.State.FAILED, f.state().tasks().get("t1").state());
    }

    @Test
    void reassignmentIsRefusedWhileComputing() {
        Fixtures f = Fixtures.ready().apply(new ClusterCommand.TaskSubmitted("t1", 5, 100));
        refused(IllegalTransitionException.class, f, new ClusterCommand.PartitionsAssigned(2, twoStages("w2", "w1"), 101));
    }

    @Test
    void shutdownThenCleanupTerminatesAndRefusesEverything() {
        Fixtures f = Fixtures.ready()
                .apply(new ClusterCommand.TaskSubmitted("t1", 5, 100))
                .apply(new ClusterCommand.Shutdown("operator", 101));
        assertEquals(SystemState.SHUTDOWN, f.state().system());
        refused(NotReadyException.class, f, new ClusterCommand.TaskSubmitted("t2", 5, 102));
        refused(IllegalTransitionException.class, f, new ClusterCommand.NodeJoined(info("w3"), 102));
        f.apply(new ClusterCommand.CleanupCompleted(103));
        assertEquals(SystemState.TERMINATED, f.state().system());
        assertEquals(TaskRecord.State.FAILED, f.state().tasks().get("t1").state());
        refused(IllegalTransitionException.class, f, new ClusterCommand.Shutdown("again", 104));
        refused(IllegalTransitionException.class, f, new ClusterCommand.Bootstrap("tiny", 1, 104));
    }

    @Test
    void cleanupBeforeShutdownAndShutdownBeforeBootstrapAreForbidden() {
        refused(IllegalTransitionException.class, Fixtures.ready(), new ClusterCommand.CleanupCompleted(9));
        refused(IllegalTransitionException.class, new Fixtures(), new ClusterCommand.Shutdown("x", 9));
    }

    @Test
    void logIndexMustIncrease() {
        ClusterState s = Fixtures.ready().state();
        assertThrows(IllegalArgumentException.class,
                () -> ClusterReducer.apply(s, new ClusterCommand.TaskSubmitted("t", 1, 1), s.lastAppliedIndex()));
    }

    @Test
    void finishedTasksAreBounded() {
        Fixtures f = Fixtures.ready();
        for (int i = 0; i < ClusterReducer.MAX_FINISHED_TASKS + 5; i++) {
            f.apply(new ClusterCommand.TaskSubmitted("t" + i, 1, i)).apply(new ClusterCommand.TaskFinished("t" + i, java.util.List.of(1L), "stop", i));
        }
        assertEquals(ClusterReducer.MAX_FINISHED_TASKS, f.state().tasks().size());
        assertTrue(f.state().tasks().containsKey("t" + (ClusterReducer.MAX_FINISHED_TASKS + 4)));
        assertTrue(!f.state().tasks().containsKey("t0"));
    }

    @Test
    void applyIsDeterministic() {
        ClusterState a = Fixtures.ready().apply(new ClusterCommand.TaskSubmitted("t", 1, 5)).state();
        ClusterState b = Fixtures.ready().apply(new ClusterCommand.TaskSubmitted("t", 1, 5)).state();
        assertEquals(a, b);
        ClusterState before = Fixtures.ready().state();
        ClusterState after = ClusterReducer.apply(before, new ClusterCommand.TaskSubmitted("t", 1, 5), 100);
        assertSame(SystemState.READY, before.system()); // the input is never mutated
        assertEquals(SystemState.COMPUTING, after.system());
    }
}
