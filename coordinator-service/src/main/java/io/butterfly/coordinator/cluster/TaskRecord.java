package io.butterfly.coordinator.cluster;

/**
 * One inference task as committed to the log (state-machines.md §2.3). Times are the command's, never
 * a clock read inside the reducer.
 */
public record TaskRecord(String taskId, State state, int promptTokens, int generatedTokens, String finishReason,
                         long createdAtMs, long updatedAtMs, String error) {

    /** Task lifecycle; dispatch is immediate here, so tasks enter at EXECUTING. */
    public enum State {
        QUEUED, SCHEDULED, DISPATCHED, EXECUTING, VALIDATING, COMPLETED, FAILED;

        public boolean terminal() {
            return this == COMPLETED || this == FAILED;
        }
    }

    static TaskRecord executing(String taskId, int promptTokens, long atMs) {
        return new TaskRecord(taskId, State.EXECUTING, promptTokens, 0, null, atMs, atMs, null);
    }

    TaskRecord completed(int generatedTokens, String finishReason, long atMs) {
        return new TaskRecord(taskId, State.COMPLETED, promptTokens, generatedTokens, finishReason, createdAtMs, atMs, null);
    }

    TaskRecord failed(String error, long atMs) {
        return new TaskRecord(taskId, State.FAILED, promptTokens, generatedTokens, null, createdAtMs, atMs, error);
    }
}
