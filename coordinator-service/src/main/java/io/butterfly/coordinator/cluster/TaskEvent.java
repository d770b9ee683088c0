package io.butterfly.coordinator.cluster;

import java.util.List;
import java.util.Objects;

/**
 * One event of an inference task as the replica running it saw it (docs/state-machines.md §2.3). Events are
 * recorded in batches ({@link ClusterCommand.TasksRecorded}); {@code atMs} is when the event happened on its replica.
 */
public sealed interface TaskEvent {

    String taskId();

    long atMs();

    /** The task entered the pipeline; the replica recording the batch owns it. */
    record Started(String taskId, int promptTokens, long atMs) implements TaskEvent {
        public Started {
            Objects.requireNonNull(taskId, "taskId");
        }
    }

    /** The task's result: the generated token ids themselves. */
    record Finished(String taskId, List<Long> tokenIds, String finishReason, long atMs) implements TaskEvent {
        public Finished {
            Objects.requireNonNull(taskId, "taskId");
            tokenIds = List.copyOf(tokenIds);
        }
    }

    record Failed(String taskId, String error, long atMs) implements TaskEvent {
        public Failed {
            Objects.requireNonNull(taskId, "taskId");
        }
    }
}
