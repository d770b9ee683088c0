package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.model.ServedModel;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/** A submitted generation: its result to await, and ways to end it early (a client gone). */
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

    /**
     * Stops the generation at its next step without ending the task: its KV caches are freed and its progress stays
     * recorded, paused with {@code reason}, for a client that comes back for the rest (at any replica) within the
     * recovery timeout. The result here completes exceptionally.
     */
    void detach(String reason);

    /**
     * Whether {@code failure} ended an answer but not its generation (the generation left this replica, or it is
     * stopping): the client gets the rest by resuming it, at any replica.
     */
    static boolean goesOnElsewhere(Throwable failure) {
        return failure instanceof io.butterfly.common.error.ButterflyException b
                && "true".equals(b.context().get(io.butterfly.coordinator.inference.engine.EngineCore.RESUMABLE_CONTEXT));
    }
}
