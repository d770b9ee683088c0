package io.butterfly.worker.engine;

import java.util.concurrent.CompletableFuture;

/**
 * How a stage asks the workers holding its other expert groups for their sums (the gateway's gRPC client): the hidden
 * states of the rows whose router chose one of the group's experts, with those choices, answered by the group's sum
 * over them.
 */
public interface ExpertExchange {

    /**
     * @param group      the group asked
     * @param layer      the model's layer (not the stage's index of it)
     * @param rows       the rows sent
     * @param hidden     their post-attention norms, {@code [rows, hidden]} row-major
     * @param chosen     each row's chosen experts, {@code [rows, topK]} (all the router chose, not only the group's)
     * @param weights    the router's weights for them, {@code [rows, topK]}
     * @return the group's sum over its experts for each row, {@code [rows, hidden]}; it fails when the group's worker
     *         does not hold those experts of that layer
     */
    CompletableFuture<float[]> partial(ExpertPlacement.Group group, int layer, int rows, float[] hidden,
                                       long[] chosen, float[] weights);
}
