package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.coordinator.model.ServedModel;
import java.util.List;

/**
 * A validated request holding its place among the running tasks (see {@link InferenceService#admit}): what the
 * generation needs to run. Closing it frees the place; running it closes it.
 */
public record AdmittedTask(ServedModel model, Pipeline.Route route, List<Long> prompt, int maxTokens,
                           SamplingParams sampling, boolean ignoreEos, StopSequences stop, TaskAdmission.Permit permit)
        implements AutoCloseable {

    @Override
    public void close() {
        permit.close();
    }
}
