package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.cluster.TaskEvent;
import io.butterfly.coordinator.cluster.TaskRequest;
import java.util.List;

/**
 * Records what becomes of the tasks this replica runs, in the replicated state every replica answers
 * {@code /api/v1/tasks} from, and where another replica finds what it needs to resume a task whose replica is gone:
 * its request, owner and tokens so far. The replica recording a task started owns it; the implementation adds who
 * that is and when its process started. Every call but {@link #commitNow} returns at once: recording is off the
 * request's path, and never fails a request.
 */
public interface TaskJournal {

    /** This replica: the owner of the tasks it records started. */
    String replicaId();

    /** When this replica's process began recording: with {@link #replicaId} it names the owner of its tasks. */
    long startedAtMs();

    /** The task entered the pipeline on this replica, asked {@code request}. */
    void started(String taskId, TaskRequest request, long atMs);

    /** The task's token {@code index} (0 = the first generated) was chosen. */
    void progressed(String taskId, int index, TaskEvent.Token token, long atMs);

    /** The task stopped generating without ending (a stage failed, its client went away). */
    void paused(String taskId, String reason, long atMs);

    /** A paused task generates again. */
    void resumed(String taskId, long atMs);

    /** The task's result: the generated token ids and why generation stopped. */
    void finished(String taskId, List<Long> tokenIds, String finishReason, long atMs);

    void failed(String taskId, String error, long atMs);

    /**
     * Returns once every event recorded before the call is committed (or given up), or after {@code timeout}; false
     * then.
     */
    boolean flush(java.time.Duration timeout) throws InterruptedException;

    /**
     * Commits one event at once (after the events recorded before it) and answers the state once it applied, for the
     * few a request waits on: taking a task over, an idempotent start. Throws as {@code ControlLog.submit} does.
     */
    ClusterState commitNow(TaskEvent event);
}
