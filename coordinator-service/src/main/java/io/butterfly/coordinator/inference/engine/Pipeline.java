package io.butterfly.coordinator.inference.engine;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.coordinator.cluster.NodeInfo;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The workers as the inference path uses them (gateway/worker implements it): each step of a micro-batch enters the
 * first stage, flows stage to stage, and the last stage's logits come back here; at their end sequences are released
 * on every stage.
 */
public interface Pipeline {

    /** The stages a step goes through, first to last. */
    interface Route {
    }

    Route route(List<NodeInfo> stages);

    /**
     * Sends one step into {@code route}; the future completes with the last stage's answer, or with a
     * {@link ButterflyException} naming the stage that failed it, could not be reached or did not answer in time.
     */
    CompletableFuture<StepResult> submit(Route route, StepInput input);

    /**
     * Fails at once the steps waiting on a stage the failure detector declared FAILED: a paused or cut-off stage
     * never answers, and without this a step would wait for the transport to give up (tens of seconds).
     */
    void abortThrough(String nodeId, String why);

    /** Frees {@code sequenceIds} on every stage of {@code route}; best effort (a failure is logged). Blocks. */
    void release(Route route, List<String> sequenceIds);
}
