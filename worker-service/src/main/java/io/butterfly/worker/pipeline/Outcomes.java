package io.butterfly.worker.pipeline;

import io.butterfly.worker.cluster.Endpoint;

/** The coordinators waiting for the outcomes of the steps they started. */
public interface Outcomes {

    /** Sends a step's outcome to the coordinator waiting for it (best effort: it times out otherwise). */
    void send(Endpoint coordinator, StepOutcome outcome);
}
