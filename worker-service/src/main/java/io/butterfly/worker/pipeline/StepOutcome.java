package io.butterfly.worker.pipeline;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.worker.engine.StageResult;
import java.util.List;

/**
 * The end of one step, for the coordinator waiting for it: the last stage's logits, or why the step failed on
 * the stage where it did. Exactly one of {@code logits} and {@code failure} is set.
 *
 * @param logits  at each sequence's last position, {@code [numSequences, vocab]}
 * @param timings of the stages before this one, in pipeline order
 * @param here    this stage's, stopped when the outcome is sent
 */
public record StepOutcome(String taskId, int step, StageResult logits, Failure failure, List<StageTiming> timings,
                          StageClock here) {

    /** Why the step failed on stage {@code nodeId}, with the code and kind that stage would answer a call with. */
    public record Failure(String nodeId, ButterflyException error) {
    }

    static StepOutcome logits(Step step, StageResult logits, StageClock here) {
        return new StepOutcome(step.taskId(), step.step(), logits, null, step.timings(), here);
    }

    static StepOutcome failed(Step step, Failure failure, StageClock here) {
        return new StepOutcome(step.taskId(), step.step(), null, failure, step.timings(), here);
    }
}
