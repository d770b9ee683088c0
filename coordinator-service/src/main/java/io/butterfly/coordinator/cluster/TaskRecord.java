package io.butterfly.coordinator.cluster;

import java.util.List;

/**
 * One inference task as committed to the log (docs/state-machines.md §2.3). Times are the command's, never
 * a clock read inside the reducer.
 */
public record TaskRecord(String taskId, State state, int promptTokens, int generatedTokens, String finishReason,
                         long createdAtMs, long updatedAtMs, String error, List<Long> tokenIds, String owner,
                         long ownerStartedAtMs) {

    public TaskRecord {
        tokenIds = tokenIds == null ? List.of() : List.copyOf(tokenIds);
        owner = owner == null ? "" : owner;
    }

    /** Still running on replica {@code replicaId}'s process started before {@code startedAtMs}: its runner is gone. */
    public boolean orphanedBy(String replicaId, long startedAtMs) {
        return !state.terminal() && owner.equals(replicaId) && ownerStartedAtMs != 0 && ownerStartedAtMs < startedAtMs;
    }

    /** Still open and logged by replica {@code replicaId}'s process that started at {@code startedAtMs}. */
    public boolean ownedBy(String replicaId, long startedAtMs) {
        return !state.terminal() && owner.equals(replicaId) && ownerStartedAtMs == startedAtMs;
    }

    /** Task lifecycle; dispatch is immediate here, so tasks enter at EXECUTING. */
    public enum State {
        QUEUED, SCHEDULED, DISPATCHED, EXECUTING, VALIDATING, COMPLETED, FAILED;

        public boolean terminal() {
            return this == COMPLETED || this == FAILED;
        }
    }

    static TaskRecord executing(String taskId, int promptTokens, String owner, long ownerStartedAtMs, long atMs) {
        return new TaskRecord(taskId, State.EXECUTING, promptTokens, 0, null, atMs, atMs, null, List.of(), owner,
                ownerStartedAtMs);
    }

    /** The committed result: the generated token ids (what a client re-reading the task gets). */
    TaskRecord completed(List<Long> tokenIds, String finishReason, long atMs) {
        return new TaskRecord(taskId, State.COMPLETED, promptTokens, tokenIds.size(), finishReason, createdAtMs, atMs, null,
                tokenIds, owner, ownerStartedAtMs);
    }

    TaskRecord failed(String error, long atMs) {
        return new TaskRecord(taskId, State.FAILED, promptTokens, generatedTokens, null, createdAtMs, atMs, error, tokenIds,
                owner, ownerStartedAtMs);
    }
}
