package io.butterfly.coordinator.inference;

import java.util.List;

/**
 * Records what becomes of the tasks this replica runs, in the replicated state every replica answers
 * {@code /api/v1/tasks} from, and where recovery finds which replica owns which task. The replica recording a task
 * started owns it; the implementation adds who that is and when its process started. Every call returns at once:
 * recording is off the request's path, and never fails a request.
 */
public interface TaskJournal {

    /** The task entered the pipeline on this replica; {@code promptTokens} is its prompt's length. */
    void started(String taskId, int promptTokens, long atMs);

    /** The task's result: the generated token ids and why generation stopped. */
    void finished(String taskId, List<Long> tokenIds, String finishReason, long atMs);

    void failed(String taskId, String error, long atMs);
}
