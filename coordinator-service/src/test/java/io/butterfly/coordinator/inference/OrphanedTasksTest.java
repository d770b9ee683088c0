package io.butterfly.coordinator.inference;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.statemachine.SystemState;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An open task keeps the system COMPUTING: a task whose runner restarted (or never came back) is failed, so the
 * cluster returns to READY; tasks other replicas are still running are left to them.
 */
class OrphanedTasksTest {

    private static final long STARTED = 1_000_000;

    private final InMemoryControlLog control = new InMemoryControlLog();
    /** Task ids whose sequences a sweep released on the stages. */
    private final List<String> released = new ArrayList<>();

    @BeforeEach
    void ready() {
        ReadyCluster.bootstrap(control);
    }

    @AfterEach
    void close() {
        control.close();
    }

    @Test
    void aRestartedReplicaFailsItsEarlierStartsTasksAndLeavesOtherReplicasTasksToThem() {
        control.submit(new ClusterCommand.TaskSubmitted("before-restart", 3, "coordinator-0", STARTED - 60_000, STARTED - 5_000));
        control.submit(new ClusterCommand.TaskSubmitted("on-another-replica", 3, "coordinator-1", STARTED - 60_000, STARTED - 4_000));
        control.submit(new ClusterCommand.TaskSubmitted("logged-before-owners", 3, STARTED - 3_000));
        assertThat(control.state().system()).isEqualTo(SystemState.COMPUTING);

        sweep("coordinator-0", STARTED + 2_000);

        assertThat(task("before-restart").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(task("before-restart").error()).contains("coordinator-0 restarted");
        assertThat(released).as("the failed task's KV caches are freed on the stages").containsExactly("before-restart");
        assertThat(task("on-another-replica").state()).isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(task("logged-before-owners").state()).isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(control.state().system()).isEqualTo(SystemState.COMPUTING);

        // Nobody came back for the others: after task-timeout the leader fails them, and the cluster is READY again.
        sweep("coordinator-0", STARTED + Duration.ofMinutes(31).toMillis());
        assertThat(task("on-another-replica").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(task("on-another-replica").error()).contains("no outcome within");
        assertThat(task("logged-before-owners").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(control.state().system()).isEqualTo(SystemState.READY);
        assertThat(released).containsExactly("before-restart", "on-another-replica", "logged-before-owners");
    }

    @Test
    void aTaskOfThisVeryStartIsLeftToItsRunner() {
        control.submit(new ClusterCommand.TaskSubmitted("running", 3, "coordinator-0", STARTED, STARTED + 1_000));
        sweep("coordinator-0", STARTED + 2_000, Set.of("running"));
        assertThat(task("running").state()).isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(released).isEmpty();
    }

    /**
     * TaskSubmitted timed out in the control log (the runner answered 503 and never ran the task) but committed:
     * the open task kept the system COMPUTING (no recovery to READY, no reassignment) for the whole task-timeout.
     */
    @Test
    void aTaskOfThisStartThatNoRunnerHoldsIsFailedAtOnce() {
        control.submit(new ClusterCommand.TaskSubmitted("given-up", 3, "coordinator-0", STARTED, STARTED + 1_000));
        control.submit(new ClusterCommand.TaskSubmitted("running", 3, "coordinator-0", STARTED, STARTED + 1_000));
        sweep("coordinator-0", STARTED + 2_000, Set.of("running"));
        assertThat(task("given-up").state()).isEqualTo(TaskRecord.State.FAILED);
        assertThat(task("given-up").error()).contains("no longer runs the task");
        assertThat(task("running").state()).isEqualTo(TaskRecord.State.EXECUTING);
        assertThat(released).containsExactly("given-up");
        sweep("coordinator-1", STARTED + 2_000, Set.of());
        assertThat(task("running").state()).as("another replica's task is its own business").isEqualTo(TaskRecord.State.EXECUTING);
    }

    private void sweep(String nodeId, long nowMs) {
        sweep(nodeId, nowMs, Set.of());
    }

    /** One sweep by replica {@code nodeId} whose inference started at STARTED and runs {@code running}, at {@code nowMs}. */
    private void sweep(String nodeId, long nowMs, Set<String> running) {
        CoordinatorProperties props = ReadyCluster.props(nodeId);
        InferenceService inference = new InferenceService(props.inference(1), ScriptedCluster.SCHEDULING, control, null,
                null, null, ServingMetrics.NONE, at(STARTED), STARTED) {
            @Override
            void releaseAbandoned(List<String> taskIds) {
                released.addAll(taskIds);
            }

            @Override
            boolean running(String taskId) {
                return running.contains(taskId);
            }
        };
        try (inference) {
            new OrphanedTasks(control, inference, props.nodeId(), props.taskTimeout(), at(nowMs)).failOrphanedTasks();
        }
    }

    private TaskRecord task(String id) {
        return control.state().tasks().get(id);
    }

    private static Clock at(long ms) {
        return Clock.fixed(Instant.ofEpochMilli(ms), ZoneOffset.UTC);
    }

}
