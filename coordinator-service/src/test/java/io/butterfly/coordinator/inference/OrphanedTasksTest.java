package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.engine.ServingMetrics;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.DelegatingControlLog;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.control.ReplicaView;
import io.butterfly.coordinator.statemachine.SystemState;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A task whose runner restarted (or never came back) is failed once no client resumed it within the recovery timeout,
 * so that every replica reports it ended and its KV caches are freed; tasks other replicas still run, or whose end is
 * on its way to the log, are left alone.
 */
class OrphanedTasksTest {

    private static final long STARTED = 1_000_000;
    private static final Duration RECOVERY = Duration.ofSeconds(60);

    private final InMemoryControlLog control = new InMemoryControlLog();
    /** Each replica's journal, its process started at STARTED. */
    private final Map<String, GroupCommitTaskJournal> journals = new HashMap<>();
    /** Task ids whose sequences a sweep released on the stages. */
    private final List<String> released = new ArrayList<>();

    @BeforeEach
    void ready() {
        ReadyCluster.bootstrap(control);
    }

    @AfterEach
    void close() {
        journals.values().forEach(GroupCommitTaskJournal::close);
        control.close();
    }

    @Test
    void aRestartedReplicaFailsItsEarlierStartsTasksOnceNobodyResumedThemAndLeavesOtherReplicasTasksToThem()
            throws Exception {
        recordedByAnEarlierStart("coordinator-0", new TaskEvent.Started("before-restart", 3, STARTED - 5_000));
        recordedByAnEarlierStart("coordinator-1", new TaskEvent.Started("on-another-replica", 3, STARTED - 4_000));
        // From a log written before tasks were recorded in batches: no owner, and the system is COMPUTING.
        control.submit(new ClusterCommand.TaskSubmitted("logged-before-owners", 3, STARTED - 3_000));
        assertThat(control.state().system()).isEqualTo(SystemState.COMPUTING);

        sweep("coordinator-0", STARTED + 2_000);
        assertThat(task("before-restart").state()).as("a client may still resume it").isEqualTo(TaskRecord.State.EXECUTING);

        sweep("coordinator-0", STARTED - 5_000 + RECOVERY.toMillis() + 1);
        assertThat(task("before-restart").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(task("before-restart").error()).contains("coordinator-0 restarted").contains("no client resumed");
        assertThat(released).as("the failed task's KV caches are freed on the stages").containsExactly("before-restart");
        assertThat(task("on-another-replica").state()).as("its replica answers").isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(task("logged-before-owners").state()).isEqualTo(TaskRecord.State.EXECUTING);

        // Nobody came back for the others: after task-timeout the leader fails them (and the old COMPUTING ends).
        sweep("coordinator-0", STARTED + Duration.ofMinutes(31).toMillis());
        assertThat(task("on-another-replica").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(task("on-another-replica").error()).contains("no outcome within").contains("coordinator-1 is gone");
        assertThat(task("logged-before-owners").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(control.state().system()).isEqualTo(SystemState.READY);
        assertThat(released).containsExactly("before-restart", "on-another-replica", "logged-before-owners");

        sweep("coordinator-0", STARTED + Duration.ofMinutes(32).toMillis());
        assertThat(released).as("an ended task is failed once").hasSize(3);
    }

    /** The leader fails the tasks of a replica that does not answer once no client resumed them in time. */
    @Test
    void theLeaderFailsTheTasksOfAReplicaThatDoesNotAnswerOnceNobodyResumedThem() throws Exception {
        recordedByAnEarlierStart("coordinator-1", new TaskEvent.Started("on-a-dead-replica", 3, STARTED));
        ControlLog sees1Dead = new DelegatingControlLog(control) {
            @Override
            public List<ReplicaView> replicaViews() {
                return List.of(new ReplicaView("coordinator-0", "LEADER", 1),
                        new ReplicaView("coordinator-1", ReplicaView.UNREACHABLE, 0));
            }
        };
        sweep(sees1Dead, "coordinator-0", STARTED + RECOVERY.toMillis() - 1, Set.of());
        assertThat(task("on-a-dead-replica").state()).isEqualTo(TaskRecord.State.EXECUTING);
        sweep(sees1Dead, "coordinator-0", STARTED + RECOVERY.toMillis() + 1, Set.of());
        assertThat(task("on-a-dead-replica").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(task("on-a-dead-replica").error()).contains("coordinator-1 does not answer");
    }

    /** A task whose client went away stays resumable for the recovery timeout, then fails. */
    @Test
    void aDetachedTaskIsFailedOnceNobodyResumedIt() throws Exception {
        journal("coordinator-0").started("detached", TestRequests.prompt(3), STARTED + 1_000);
        journal("coordinator-0").paused("detached", "the client closed the stream", STARTED + 2_000);
        sweep("coordinator-0", STARTED + 2_000 + RECOVERY.toMillis() - 1);
        assertThat(task("detached").state()).isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(task("detached").pauseReason()).isEqualTo("the client closed the stream");
        sweep("coordinator-0", STARTED + 2_000 + RECOVERY.toMillis() + 1);
        assertThat(task("detached").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(task("detached").error()).contains("paused (the client closed the stream) and not resumed");
    }

    /** A failure recorded as the task's former owner does not apply once the task moved to another replica. */
    @Test
    void aTaskTakenOverMeanwhileIsNotFailedAsItsFormerOwners() throws Exception {
        recordedByAnEarlierStart("coordinator-0", new TaskEvent.Started("moved", 3, STARTED - 5_000));
        // Its failure waits in the journal (an hour's interval) until the take-over is committed: the order under test,
        // not a race with a flush interval.
        GroupCommitTaskJournal mine = GroupCommitTaskJournal.start(control,
                new GroupCommitTaskJournal.Settings("coordinator-0", Duration.ofHours(1), Duration.ofHours(1),
                        256, 10_000), at(STARTED));
        journals.put("coordinator-0", mine);
        mine.failedAs("moved", "gave up", "coordinator-0", STARTED - 60_000, STARTED);
        journal("coordinator-1").commitNow(new TaskEvent.Adopted("moved", "coordinator-0", STARTED - 60_000, STARTED));
        assertThat(mine.flush(Duration.ofSeconds(10))).isTrue();
        assertThat(task("moved").state()).isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(task("moved").owner()).isEqualTo("coordinator-1");
    }

    @Test
    void aTaskOfThisVeryStartIsLeftToItsRunner() throws Exception {
        journal("coordinator-0").started("running", TestRequests.prompt(3), STARTED + 1_000);
        sweep("coordinator-0", STARTED + 2_000, Set.of("running"));
        assertThat(task("running").state()).isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(task("running").owner()).isEqualTo("coordinator-0");
        assertThat(released).isEmpty();
    }

    /** Its runner is done and its outcome is queued in the journal, not yet committed: it is the journal's to record. */
    @Test
    void aTaskWhoseOutcomeIsOnItsWayToTheLogIsLeftAlone() throws Exception {
        GroupCommitTaskJournal slow = GroupCommitTaskJournal.start(control,
                new GroupCommitTaskJournal.Settings("coordinator-0", Duration.ofHours(1), Duration.ofHours(1),
                        256, 10_000), at(STARTED));
        journals.put("coordinator-0", slow);
        slow.started("done", TestRequests.prompt(3), STARTED + 1_000);
        assertThat(slow.flush(Duration.ofSeconds(10))).isTrue();
        slow.finished("done", List.of(7L, 2L), "stop", STARTED + 1_500);
        assertThat(slow.pending("done")).isTrue();

        new OrphanedTasks(control, inference(Set.of()), slow, Duration.ofMinutes(30), RECOVERY, at(STARTED + 2_000))
                .failOrphanedTasks();
        assertThat(slow.flush(Duration.ofSeconds(10))).isTrue();
        assertThat(task("done").state()).isEqualTo(TaskRecord.State.COMPLETED);
        assertThat(task("done").tokenIds()).containsExactly(7L, 2L);
        assertThat(released).isEmpty();
    }

    /**
     * Recorded started by this very start, but no runner here holds it and nothing of it is on its way to the log: its
     * outcome was dropped (the log could not commit for so long that the journal's bound was reached).
     */
    @Test
    void aTaskOfThisStartThatNoRunnerHoldsIsFailedAfterAGrace() throws Exception {
        journal("coordinator-0").started("given-up", TestRequests.prompt(3), STARTED + 1_000);
        journal("coordinator-0").started("running", TestRequests.prompt(3), STARTED + 1_000);
        sweep("coordinator-0", STARTED + 2_000, Set.of("running"));
        assertThat(task("given-up").state()).as("its runner may be about to take it (a client resuming it)")
                .isEqualTo(TaskRecord.State.EXECUTING);
        sweep("coordinator-0", STARTED + 12_000, Set.of("running"));
        assertThat(task("given-up").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(task("given-up").error()).contains("no longer runs the task");
        assertThat(task("running").state()).isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(released).containsExactly("given-up");
        sweep("coordinator-1", STARTED + 2_000, Set.of());
        assertThat(task("running").state()).as("another replica's task is its own business").isEqualTo(TaskRecord.State.EXECUTING);
    }

    private void recordedByAnEarlierStart(String replica, TaskEvent event) {
        control.submit(new ClusterCommand.TasksRecorded(replica, STARTED - 60_000, List.of(event), event.atMs()));
    }

    private void sweep(String nodeId, long nowMs) throws InterruptedException {
        sweep(nodeId, nowMs, Set.of());
    }

    private void sweep(String nodeId, long nowMs, Set<String> running) throws InterruptedException {
        sweep(control, nodeId, nowMs, running);
    }

    /** One sweep by replica {@code nodeId} (started at STARTED, running {@code running}) at {@code nowMs}, recorded. */
    private void sweep(ControlLog log, String nodeId, long nowMs, Set<String> running) throws InterruptedException {
        GroupCommitTaskJournal journal = journal(nodeId);
        assertThat(journal.flush(Duration.ofSeconds(10))).isTrue();
        CoordinatorProperties props = ReadyCluster.props(nodeId);
        try (InferenceService inference = inference(running)) {
            new OrphanedTasks(log, inference, journal, props.taskTimeout(), RECOVERY, at(nowMs)).failOrphanedTasks();
        }
        assertThat(journal.flush(Duration.ofSeconds(10))).isTrue();
    }

    private GroupCommitTaskJournal journal(String nodeId) {
        return journals.computeIfAbsent(nodeId, id -> GroupCommitTaskJournal.start(control,
                new GroupCommitTaskJournal.Settings(id, Duration.ofMillis(5), Duration.ofMillis(5),
                        256, 10_000), at(STARTED)));
    }

    /** This replica's inference service as the sweep sees it: it runs {@code running}; releases are noted. */
    private InferenceService inference(Set<String> running) {
        return new InferenceService(ReadyCluster.props("unused").inference(1, RECOVERY), ScriptedCluster.SCHEDULING,
                control, null, null, null, ServingMetrics.NONE, RequestTracing.NONE, at(STARTED)) {
            @Override
            void releaseAbandoned(List<String> taskIds) {
                released.addAll(taskIds);
            }

            @Override
            boolean running(String taskId) {
                return running.contains(taskId);
            }
        };
    }

    private TaskRecord task(String id) {
        return control.state().tasks().get(id);
    }

    private static Clock at(long ms) {
        return Clock.fixed(Instant.ofEpochMilli(ms), ZoneOffset.UTC);
    }
}
