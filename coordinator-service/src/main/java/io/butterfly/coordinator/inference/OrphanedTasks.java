package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.control.ControlLog;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends tasks whose runner is gone. Only the replica that runs a task records its outcome; if it restarts
 * mid-task, the log replays the task as still running, and an open task keeps the system COMPUTING, so a
 * degraded cluster could never become READY again. So each replica fails the open tasks of its own earlier
 * start, and the leader fails any task open for longer than {@code task-timeout} (a replica that never came
 * back). A task of this very start that no runner here holds is failed too: its TaskSubmitted (or its outcome)
 * timed out in the control log yet committed, so nobody would end it until task-timeout. Either way the task's
 * sequence is released on the stages: nobody else would free its KV caches.
 */
public class OrphanedTasks {

    private static final Logger log = LoggerFactory.getLogger(OrphanedTasks.class);

    private final ControlLog control;
    private final InferenceService inference;
    private final String nodeId;
    private final Duration taskTimeout;
    private final Clock clock;

    /**
     * @param nodeId      this replica
     * @param taskTimeout how long the leader lets a task stay open before it fails it
     */
    public OrphanedTasks(ControlLog control, InferenceService inference, String nodeId, Duration taskTimeout,
                         Clock clock) {
        this.control = control;
        this.inference = inference;
        this.nodeId = nodeId;
        this.taskTimeout = taskTimeout;
        this.clock = clock;
    }

    public void failOrphanedTasks() {
        ClusterState s = control.state();
        long now = clock.millis();
        boolean leading = control.leadership().leading();
        List<String> failed = new ArrayList<>();
        for (TaskRecord t : s.tasks().values()) {
            String why = null;
            if (t.orphanedBy(nodeId, inference.startedAtMs())) {
                why = "coordinator " + nodeId + " restarted while the task ran";
            } else if (t.ownedBy(nodeId, inference.startedAtMs()) && !inference.running(t.taskId())) {
                // Its runner gave up: a TaskSubmitted or outcome that timed out but committed (or was never followed).
                why = "coordinator " + nodeId + " no longer runs the task (its outcome could not be recorded)";
            } else if (leading && !t.state().terminal() && now - t.createdAtMs() > taskTimeout.toMillis()) {
                why = "no outcome within " + taskTimeout + " (its coordinator " + t.owner() + " is gone)";
            }
            if (why != null) {
                try {
                    control.submit(new ClusterCommand.TaskFailed(t.taskId(), why, now));
                    log.warn("task {} failed: {}", t.taskId(), why);
                } catch (RuntimeException e) {
                    log.debug("task {} not failed yet: {}", t.taskId(), e.toString()); // retried on the next sweep
                    continue;
                }
                failed.add(t.taskId());
            }
        }
        if (!failed.isEmpty()) {
            inference.releaseAbandoned(failed);
        }
    }
}
