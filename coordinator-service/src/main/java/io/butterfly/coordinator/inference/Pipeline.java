package io.butterfly.coordinator.inference;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.coordinator.cluster.NodeInfo;
import java.util.List;

/**
 * The workers as the inference path uses them (gateway/worker implements it): each step of a task enters the
 * first stage, flows stage to stage, and the last stage's logits come back here; at its end the task's sequence
 * is released on every stage.
 */
public interface Pipeline {

    /** The stages a task's steps go through, first to last, resolved once when the task is admitted. */
    interface Route {
    }

    Route route(List<NodeInfo> stages);

    /**
     * Runs one step through {@code route} and returns the last stage's answer; a stage that fails the step, cannot
     * be reached or does not answer in time is a {@link ButterflyException} naming it.
     */
    StepResult step(Route route, StepInput input);

    /**
     * Fails at once the steps waiting on a stage the failure detector declared FAILED: a paused or cut-off stage
     * never answers, and without this a task would wait for the transport to give up (tens of seconds).
     */
    void abortThrough(String nodeId, String why);

    /** Frees the sequences of {@code taskIds} on every stage of {@code route}; best effort (a failure is logged). */
    void release(Route route, List<String> taskIds);
}
