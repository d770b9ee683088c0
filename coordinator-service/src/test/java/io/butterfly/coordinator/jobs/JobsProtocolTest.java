package io.butterfly.coordinator.jobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.JobRecord;
import io.butterfly.coordinator.cluster.JobResult;
import io.butterfly.coordinator.cluster.JobWork;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.jobs.wire.JobsMessage;
import io.butterfly.coordinator.jobs.wire.WireError;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * What the protocol answers besides a batch (a batch's generation is the in-process cluster's, JobsIT): results kept
 * once per (step, position) and bounded, and every refusal an ERROR with its code.
 */
class JobsProtocolTest {

    private static final long SEED = -3; // 2^64 - 3 on the wire

    private final InMemoryControlLog control = new InMemoryControlLog();
    private final JobsProtocol protocol = new JobsProtocol(control, new JobBatches(null, sha -> java.util.Optional.empty(),
            100), Runnable::run, () -> 5, 60_000, "coordinator");

    JobsProtocolTest() {
        control.submit(new ClusterCommand.JobDefined(new JobRecord("j", "ab".repeat(32), 10, 4, SEED, 8, 0, 1, 0, 1,
                1_000 + 2 * JobWork.RESULT_OVERHEAD_BYTES), 1));
    }

    @Test
    void aResultIsCommittedOnceOnlyForABatchHandedOutAndARepeatIsAcknowledged() {
        Random random = new Random(3);
        byte[] data = new byte[100];
        random.nextBytes(data);
        assertThat(answer(new JobsMessage.Result(SEED, 2, 8, data))).isEqualTo(error(WireError.NOT_HANDED_OUT));
        handOut(2, 8);
        handOut(3, 8);
        assertThat(answer(new JobsMessage.Result(SEED, 2, 8, data))).isEqualTo(new JobsMessage.ResultAck(SEED, 2, 8, true));
        assertThat(answer(new JobsMessage.Result(SEED, 2, 8, new byte[] {1})))
                .isEqualTo(new JobsMessage.ResultAck(SEED, 2, 8, false));
        assertThat(control.state().workOf("j").results().values()).singleElement()
                .satisfies(r -> assertThat(r.data()).isEqualTo(data));
        assertThat(answer(new JobsMessage.Result(SEED, 3, 8, new byte[950]))).isEqualTo(error(WireError.RESULTS_FULL));
        assertThat(answer(new JobsMessage.Result(SEED, 3, 8, new byte[900])))
                .isEqualTo(new JobsMessage.ResultAck(SEED, 3, 8, true));
        assertThat(control.state().workOf("j").results().values()).extracting(JobResult::step).containsExactly(2L, 3L);
    }

    @Test
    void aRequestForAnyBatchOfAStepWhoseBatchesAllHaveResultsIsToldSo() {
        for (long p : new long[] {0, 4, 8}) {
            handOut(0, p);
            assertThat(answer(new JobsMessage.Result(SEED, 0, p, new byte[1]))).isInstanceOf(JobsMessage.ResultAck.class);
        }
        assertThat(answer(new JobsMessage.JobRequest(SEED, 0, JobWork.ANY_POSITION))).isEqualTo(error(WireError.STEP_COMPLETE));
    }

    private void handOut(long step, long position) {
        control.submit(new ClusterCommand.JobBatchLeased("j", step, position, "test", 60_000, 2));
    }

    @Test
    void refusalsAreErrorsWithTheirCode() {
        assertThat(answer(new JobsMessage.JobRequest(7, 0, 0))).isEqualTo(error(WireError.UNKNOWN_JOB));
        assertThat(answer(new JobsMessage.Result(7, 0, 0, new byte[0]))).isEqualTo(error(WireError.UNKNOWN_JOB));
        assertThat(answer(new JobsMessage.JobRequest(SEED, 0, 10))).isEqualTo(error(WireError.POSITION_OUT_OF_RANGE));
        assertThat(answer(new JobsMessage.JobRequest(SEED, 0, -2))).isEqualTo(error(WireError.POSITION_OUT_OF_RANGE));
        assertThat(answer(new JobsMessage.Result(SEED, 0, 10, new byte[0]))).isEqualTo(error(WireError.POSITION_OUT_OF_RANGE));
        assertThat(answer(new JobsMessage.JobResponse(SEED, 0, 0, new byte[0]))).isEqualTo(error(WireError.UNEXPECTED_OPCODE));
        assertThat(answer(new JobsMessage.ErrorFrame(1, "x"))).isEqualTo(error(WireError.UNEXPECTED_OPCODE));
        // this replica holds no copy of the dataset: retry elsewhere
        assertThat(answer(new JobsMessage.JobRequest(SEED, 0, 0))).isEqualTo(error(WireError.UNAVAILABLE));
    }

    private JobsMessage answer(JobsMessage m) {
        JobsMessage reply = protocol.answer(m, "test").join();
        // compare errors by code: their text is for people
        return reply instanceof JobsMessage.ErrorFrame e ? new JobsMessage.ErrorFrame(e.code(), "") : reply;
    }

    private static JobsMessage error(WireError code) {
        return new JobsMessage.ErrorFrame(code.code(), "");
    }
}
