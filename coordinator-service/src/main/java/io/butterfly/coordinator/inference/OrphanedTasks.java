package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.TaskRecord;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ReplicaView;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ends tasks nobody will carry on, so that every replica's {@code /api/v1/tasks} tells the truth about them and their
 * sequences' KV caches are freed on the stages. A task whose runner is gone stays resumable for the recovery timeout
 * since its last progress: a client that comes back for it (with {@code Last-Event-ID} or its
 * {@code Idempotency-Key}) at any replica has it taken over there. After that it fails:
 *
 * <ul>
 *   <li>each replica fails the open tasks of its own earlier start (it restarted while they ran), and the tasks it
 *       owns but no longer runs: paused ones (their client went away, or this replica stopped), and, after a short
 *       grace, ones whose outcome never reached the log (the journal's bound was reached);</li>
 *   <li>the leader fails the tasks of a replica that does not answer, and any task open for longer than
 *       {@code task-timeout}.</li>
 * </ul>
 * Failures are recorded as the owner's (they do not apply if the task moved meanwhile), and the tasks' sequences are
 * released on the stages: nobody else would free them.
 */
public class OrphanedTasks {

    private static final Logger log = LoggerFactory.getLogger(OrphanedTasks.class);
    /** A task this replica owns but does not run, not paused: its outcome is lost if none arrives within this. */
    private static final long LOST_OUTCOME_GRACE_MS = 10_000;

    private final ControlLog control;
    private final InferenceService inference;
    private final GroupCommitTaskJournal journal;
    private final Duration taskTimeout;
    private final Duration recoveryTimeout;
    private final Clock clock;

    /**
     * @param taskTimeout     how long the leader lets a task stay open before it fails it
     * @param recoveryTimeout how long a task whose runner is gone may wait for a client to resume it
     */
    public OrphanedTasks(ControlLog control, InferenceService inference, GroupCommitTaskJournal journal,
                         Duration taskTimeout, Duration recoveryTimeout, Clock clock) {
        this.control = control;
        this.inference = inference;
        this.journal = journal;
        this.taskTimeout = taskTimeout;
        this.recoveryTimeout = recoveryTimeout;
        this.clock = clock;
    }

    public void failOrphanedTasks() {
        ClusterState s = control.state();
        long now = clock.millis();
        boolean leading = control.leadership().leading();
        String self = journal.replicaId();
        Set<String> unreachable = null; // asked of the group only when a task needs it
        List<String> failed = new ArrayList<>();
        for (TaskRecord t : s.tasks().values()) {
            if (t.state().terminal() || journal.pending(t.taskId())) {
                continue; // ended, or its next event (or this sweep's failure of it) is on its way to the log
            }
            boolean unresumed = now - t.updatedAtMs() > recoveryTimeout.toMillis();
            String why = null;
            if (t.orphanedBy(self, journal.startedAtMs())) {
                why = unresumed ? "coordinator " + self + " restarted while the task ran, and no client resumed it"
                        + " within " + recoveryTimeout : null;
            } else if (t.ownedBy(self, journal.startedAtMs())) {
                if (inference.running(t.taskId())) {
                    continue;
                }
                if (t.paused()) {
                    why = unresumed ? "paused (" + t.pauseReason() + ") and not resumed within " + recoveryTimeout : null;
                } else if (now - t.updatedAtMs() > LOST_OUTCOME_GRACE_MS) {
                    why = "coordinator " + self + " no longer runs the task (its outcome could not be recorded)";
                }
            } else if (leading && now - t.createdAtMs() > taskTimeout.toMillis()) {
                why = "no outcome within " + taskTimeout + " (its coordinator " + t.owner() + " is gone)";
            } else if (leading && unresumed && !t.owner().equals(self)) {
                if (unreachable == null) {
                    unreachable = control.replicaViews().stream()
                            .filter(v -> ReplicaView.UNREACHABLE.equals(v.role())).map(ReplicaView::replicaId)
                            .collect(Collectors.toSet());
                }
                why = unreachable.contains(t.owner()) ? "its coordinator " + t.owner() + " does not answer, and no"
                        + " client resumed the task within " + recoveryTimeout : null;
            }
            if (why != null) {
                journal.failedAs(t.taskId(), why, t.owner(), t.ownerStartedAtMs(), now);
                log.warn("task {} failed: {}", t.taskId(), why);
                failed.add(t.taskId());
            }
        }
        if (!failed.isEmpty()) {
            inference.releaseAbandoned(failed);
        }
    }
}
