package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.model.ServedModel;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** A submitted generation: its result to await, and a way to end it early (a client gone). */
public interface RequestHandle {

    /** The task id (see /api/v1/tasks). */
    String taskId();

    /** The model it runs on. */
    ServedModel model();

    /** Its prompt, as token ids. */
    List<Long> promptTokenIds();

    /** Completes with the generation, or exceptionally with why it failed. */
    CompletableFuture<GenerationResult> result();

    /** Ends the generation at its next step, as failed with {@code reason}; its KV caches are freed. */
    void cancel(String reason);
}
