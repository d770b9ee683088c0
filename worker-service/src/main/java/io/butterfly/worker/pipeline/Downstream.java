package io.butterfly.worker.pipeline;

import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.engine.StageResult;
import java.util.List;

/** The stages after this one, reached through their Steps streams. */
public interface Downstream {

    /**
     * Hands {@code step} on to its next stage (the first of its downstream), with this stage's hidden states as the
     * input, the rest of the downstream, and this stage's timing (stopped once the input is encoded) and what it
     * computed ({@code hashes}: each sequence's input hash there, this stage's contract in the envelope) after the
     * others.
     *
     * @throws io.butterfly.common.error.ButterflyException UNAVAILABLE if the next stage's stream cannot take it
     */
    void forward(Step step, StageResult hidden, StageClock here, StageHashes hashes);

    /** Asks {@code next} to free these sequences and pass the request on to {@code rest}; never waited for. */
    void release(Endpoint next, List<String> sequenceIds, List<Endpoint> rest);
}
