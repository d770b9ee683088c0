package io.butterfly.coordinator.inference;

import java.util.List;

/**
 * Where tasks are recorded for auditing and for the other replicas (/api/v1/tasks answers on every one). Off the
 * request path: calls never wait for a quorum.
 */
public interface TaskJournal {

    void started(String taskId, int promptTokens, long atMs);

    void finished(String taskId, List<Long> tokenIds, String finishReason, long atMs);

    void failed(String taskId, String error, long atMs);
}
