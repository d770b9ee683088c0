package io.butterfly.worker.pipeline;

import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.engine.StageResult;
import java.util.List;

/** Where this stage sends what a step leaves it with: the next stage, or the coordinator waiting for the outcome. */
public interface StepRoutes {

    /**
     * Hands {@code step} on to its next stage (the first of its downstream), with this stage's hidden states as the
     * input, the rest of the downstream, and this stage's timing (stopped once the input is encoded) after the others.
     *
     * @throws io.butterfly.common.error.ButterflyException UNAVAILABLE if the next stage's stream cannot take it
     */
    void toNextStage(Step step, StageResult hidden, StageClock here);

    /** Sends a step's outcome to the coordinator waiting for it (best effort: it times out otherwise). */
    void toCoordinator(Endpoint coordinator, StepOutcome outcome);

    /** Asks {@code next} to free these sequences and pass the request on to {@code rest}; never waited for. */
    void releaseOn(Endpoint next, List<String> sequenceIds, List<Endpoint> rest);
}
