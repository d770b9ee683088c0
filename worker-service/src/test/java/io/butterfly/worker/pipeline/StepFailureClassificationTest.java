package io.butterfly.worker.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.worker.engine.CacheBudgetExceededException;
import io.butterfly.worker.engine.SequenceConflictException;
import org.junit.jupiter.api.Test;

/**
 * The code and status a failed step is reported with decide what the coordinator's client hears: a full KV
 * budget is worth a retry (RESOURCE_EXHAUSTED, REST 429), a sequence that can never fit is not (OUT_OF_RANGE,
 * REST 413), and a step out of order is the caller's mistake (FAILED_PRECONDITION).
 */
class StepFailureClassificationTest {

    @Test
    void aFullBudgetIsResourceExhaustedAndRetryable() {
        ButterflyException e = PipelineStage.classify(new CacheBudgetExceededException("budget full", false));
        assertThat(e.code()).isEqualTo(ErrorCode.INSUFFICIENT_MEMORY);
        assertThat(e.kind()).isEqualTo(ErrorKind.RESOURCE_EXHAUSTED);
        assertThat(e.getMessage()).isEqualTo("budget full");
    }

    @Test
    void aSequenceLargerThanTheWholeBudgetIsOutOfRange() {
        ButterflyException e = PipelineStage.classify(new CacheBudgetExceededException("never fits", true));
        assertThat(e.code()).isEqualTo(ErrorCode.INSUFFICIENT_MEMORY);
        assertThat(e.kind()).isEqualTo(ErrorKind.OUT_OF_RANGE);
    }

    @Test
    void aStepOutOfOrderIsAFailedPrecondition() {
        ButterflyException e = PipelineStage.classify(new SequenceConflictException("released before this step"));
        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MESSAGE);
        assertThat(e.kind()).isEqualTo(ErrorKind.FAILED_PRECONDITION);
    }

    @Test
    void malformedInputIsInvalidArgument() {
        ButterflyException e = PipelineStage.classify(new IllegalArgumentException("sequences must not be empty"));
        assertThat(e.kind()).isEqualTo(ErrorKind.INVALID_ARGUMENT);
    }
}
