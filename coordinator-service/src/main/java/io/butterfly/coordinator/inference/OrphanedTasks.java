package io.butterfly.coordinator.inference;

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
 * Ends tasks whose runner is gone, so that every replica's {@code /api/v1/tasks} tells the truth about them and their
 * sequences' KV caches are freed on the stages. Only the replica that runs a task records its outcome; if it restarts
 * mid-task, the log still holds the task as running. So each replica fails the open tasks of its own earlier start,
 * and the leader fails any task open for longer than {@code task-timeout} (a replica that never came back). A task of
 * this very start that no runner here holds and whose outcome is not on its way to the log is failed too: its outcome
 * was dropped (the log could not commit for so long that the journal's bound was reached). Failures are recorded
 * through this replica's journal, and the tasks' sequences are released on the stages: nobody else would free them.
 */
public class OrphanedTasks {

    private static final Logger log = LoggerFactory.getLogger(OrphanedTasks.class);

    private final ControlLog control;
    private final InferenceService inference;
    private final GroupCommitTaskJournal journal;
    private final Duration taskTimeout;
    private final Clock clock;

    /** @param taskTimeout how long the leader lets a task stay open before it fails it */
    public OrphanedTasks(ControlLog control, InferenceService inference, GroupCommitTaskJournal journal,
                         Duration taskTimeout, Clock clock) {
        this.control = control;
        this.inference = inference;
        this.journal = journal;
        this.taskTimeout = taskTimeout;
        this.clock = clock;
    }

    public void failOrphanedTasks() {
        ClusterState s = control.state();
        long now = clock.millis();
        boolean leading = control.leadership().leading();
        String self = journal.replicaId();
        List<String> failed = new ArrayList<>();
        for (TaskRecord t : s.tasks().values()) {
            if (t.state().terminal() || journal.pending(t.taskId())) {
                continue; // ended, or its end (or this sweep's failure of it) is on its way to the log
            }
            String why = null;
            if (t.orphanedBy(self, journal.startedAtMs())) {
                why = "coordinator " + self + " restarted while the task ran";
            } else if (t.ownedBy(self, journal.startedAtMs()) && !inference.running(t.taskId())) {
                why = "coordinator " + self + " no longer runs the task (its outcome could not be recorded)";
            } else if (leading && now - t.createdAtMs() > taskTimeout.toMillis()) {
                why = "no outcome within " + taskTimeout + " (its coordinator " + t.owner() + " is gone)";
            }
            if (why != null) {
                journal.failed(t.taskId(), why, now);
                log.warn("task {} failed: {}", t.taskId(), why);
                failed.add(t.taskId());
            }
        }
        if (!failed.isEmpty()) {
            inference.releaseAbandoned(failed);
        }
    }
}
