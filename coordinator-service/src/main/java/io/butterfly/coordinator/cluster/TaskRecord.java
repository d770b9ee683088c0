package io.butterfly.coordinator.cluster;

import java.util.ArrayList;
import java.util.List;

/**
 * One inference task as committed to the log (docs/state-machines.md §2.3). Times are the command's, never
 * a clock read inside the reducer.
 *
 * @param tokenIds      the generated token ids: the result once COMPLETED, the progress recorded so far before
 * @param request       what was asked (null for tasks recorded before requests were); its prompt is dropped at the end
 * @param logprobs      each generated token's log-probability, as far as progress was recorded
 * @param topLogprobs   each generated token's step's likeliest tokens (empty lists unless the request asked for them;
 *                      kept for the newest tokens only, {@link TaskRetention})
 * @param pausedAtMs    when the running task last paused (a stage failed, or its streaming client went away); 0 when
 *                      it is not paused
 * @param pauseReason   why it paused (null when it is not)
 */
public record TaskRecord(String taskId, State state, int promptTokens, int generatedTokens, String finishReason,
                         long createdAtMs, long updatedAtMs, String error, List<Long> tokenIds, String owner,
                         long ownerStartedAtMs, TaskRequest request, List<Double> logprobs,
                         List<List<TaskEvent.Alternative>> topLogprobs, long pausedAtMs, String pauseReason) {

    public TaskRecord {
        tokenIds = tokenIds == null ? List.of() : List.copyOf(tokenIds);
        owner = owner == null ? "" : owner;
        logprobs = logprobs == null ? List.of() : List.copyOf(logprobs);
        topLogprobs = topLogprobs == null ? List.of() : topLogprobs.stream().map(List::copyOf).toList();
    }

    /** Still running on replica {@code replicaId}'s process started before {@code startedAtMs}: its runner is gone. */
    public boolean orphanedBy(String replicaId, long startedAtMs) {
        return !state.terminal() && owner.equals(replicaId) && ownerStartedAtMs != 0 && ownerStartedAtMs < startedAtMs;
    }

    /** Still open and logged by replica {@code replicaId}'s process that started at {@code startedAtMs}. */
    public boolean ownedBy(String replicaId, long startedAtMs) {
        return !state.terminal() && isOwner(replicaId, startedAtMs);
    }

    /** Whether replica {@code replicaId}'s process that started at {@code startedAtMs} is (or was, at the end) its owner. */
    public boolean isOwner(String replicaId, long startedAtMs) {
        return owner.equals(replicaId) && ownerStartedAtMs == startedAtMs;
    }

    /** Of {@code tasks}, the one a request with {@code idempotencyKey} started; null if none (or no key). */
    static TaskRecord holdingKey(Iterable<TaskRecord> tasks, String idempotencyKey) {
        if (idempotencyKey == null) {
            return null;
        }
        for (TaskRecord t : tasks) {
            if (t.request != null && idempotencyKey.equals(t.request.idempotencyKey())) {
                return t;
            }
        }
        return null;
    }

    static TaskRecord holdingKey(Iterable<TaskRecord> tasks, TaskRequest request) {
        return request == null ? null : holdingKey(tasks, request.idempotencyKey());
    }

    public boolean paused() {
        return pausedAtMs != 0;
    }

    /** Task lifecycle; dispatch is immediate here, so tasks enter at EXECUTING. */
    public enum State {
        QUEUED, SCHEDULED, DISPATCHED, EXECUTING, VALIDATING, COMPLETED, FAILED;

        public boolean terminal() {
            return this == COMPLETED || this == FAILED;
        }
    }

    static TaskRecord executing(String taskId, int promptTokens, TaskRequest request, String owner,
                                long ownerStartedAtMs, long atMs) {
        return new TaskRecord(taskId, State.EXECUTING, promptTokens, 0, null, atMs, atMs, null, List.of(), owner,
                ownerStartedAtMs, request, List.of(), List.of(), 0, null);
    }

    /**
     * With the tokens of {@code p} that follow those recorded: a progress applied again adds nothing, and one that
     * would leave a gap (an earlier one was lost) is not applied, so the recorded tokens stay the generation's first.
     */
    TaskRecord progressed(TaskEvent.Progressed p) {
        int have = tokenIds.size();
        int end = p.fromIndex() + p.tokens().size();
        if (p.fromIndex() > have || end <= have) {
            return this;
        }
        List<Long> ids = new ArrayList<>(tokenIds);
        List<Double> lps = new ArrayList<>(logprobs);
        List<List<TaskEvent.Alternative>> tops = new ArrayList<>(topLogprobs);
        for (TaskEvent.Token t : p.tokens().subList(have - p.fromIndex(), p.tokens().size())) {
            ids.add(t.id());
            lps.add(t.logprob());
            tops.add(t.top());
        }
        return new TaskRecord(taskId, state, promptTokens, ids.size(), finishReason, createdAtMs, p.atMs(), error, ids,
                owner, ownerStartedAtMs, request, lps, TaskRetention.newestAlternatives(tops), pausedAtMs, pauseReason);
    }

    TaskRecord paused(String reason, long atMs) {
        return new TaskRecord(taskId, state, promptTokens, generatedTokens, finishReason, createdAtMs, atMs, error,
                tokenIds, owner, ownerStartedAtMs, request, logprobs, topLogprobs, atMs, reason == null ? "" : reason);
    }

    TaskRecord resumed(long atMs) {
        return new TaskRecord(taskId, state, promptTokens, generatedTokens, finishReason, createdAtMs, atMs, error,
                tokenIds, owner, ownerStartedAtMs, request, logprobs, topLogprobs, 0, null);
    }

    /** Owned from now on by replica {@code replica}'s process that started at {@code startedAtMs}. */
    TaskRecord adoptedBy(String replica, long startedAtMs, long atMs) {
        return new TaskRecord(taskId, state, promptTokens, generatedTokens, finishReason, createdAtMs, atMs, error,
                tokenIds, replica, startedAtMs, request, logprobs, topLogprobs, pausedAtMs, pauseReason);
    }

    /** The committed result: the generated token ids (what a client re-reading the task gets). */
    TaskRecord completed(List<Long> ids, String reason, long atMs) {
        return new TaskRecord(taskId, State.COMPLETED, promptTokens, ids.size(), reason, createdAtMs, atMs, null,
                ids, owner, ownerStartedAtMs, ended(request), logprobs, topLogprobs, 0, null);
    }

    TaskRecord failed(String why, long atMs) {
        return new TaskRecord(taskId, State.FAILED, promptTokens, generatedTokens, null, createdAtMs, atMs, why,
                tokenIds, owner, ownerStartedAtMs, ended(request), logprobs, topLogprobs, 0, null);
    }

    private static TaskRequest ended(TaskRequest request) {
        return request == null ? null : request.withoutPrompt();
    }
}
