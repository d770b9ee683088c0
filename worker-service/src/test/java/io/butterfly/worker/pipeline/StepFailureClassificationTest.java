package io.butterfly.worker.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.proto.common.v1.ErrorCode;
import io.butterfly.worker.execution.CacheBudgetExceededException;
import io.butterfly.worker.execution.SequenceConflictException;
import io.grpc.Status;
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
        assertThat(e.status()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(e.getMessage()).isEqualTo("budget full");
    }

    @Test
    void aSequenceLargerThanTheWholeBudgetIsOutOfRange() {
        ButterflyException e = PipelineStage.classify(new CacheBudgetExceededException("never fits", true));
        assertThat(e.code()).isEqualTo(ErrorCode.INSUFFICIENT_MEMORY);
        assertThat(e.status()).isEqualTo(Status.Code.OUT_OF_RANGE);
    }

    @Test
    void aStepOutOfOrderIsAFailedPrecondition() {
        ButterflyException e = PipelineStage.classify(new SequenceConflictException("released before this step"));
        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_MESSAGE);
        assertThat(e.status()).isEqualTo(Status.Code.FAILED_PRECONDITION);
    }

    @Test
    void malformedInputIsInvalidArgument() {
        ButterflyException e = PipelineStage.classify(new IllegalArgumentException("sequences must not be empty"));
        assertThat(e.status()).isEqualTo(Status.Code.INVALID_ARGUMENT);
    }
}
