package io.butterfly.coordinator.jobs;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.JobRecord;
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
    private final ResultStore results = new ResultStore(1_000, () -> 5);
    private final JobsProtocol protocol = new JobsProtocol(control, new JobBatches(null, sha -> java.util.Optional.empty(),
            100), results);

    JobsProtocolTest() {
        control.submit(new ClusterCommand.JobDefined(new JobRecord("j", "ab".repeat(32), 10, 4, SEED, 8, 0, 1, 0, 1), 1));
    }

    @Test
    void aResultIsKeptOnceAndARepeatIsAcknowledged() {
        Random random = new Random(3);
        byte[] data = new byte[100];
        random.nextBytes(data);
        assertThat(answer(new JobsMessage.Result(SEED, 2, 9, data))).isEqualTo(new JobsMessage.ResultAck(SEED, 2, 9, true));
        assertThat(answer(new JobsMessage.Result(SEED, 2, 9, new byte[] {1})))
                .isEqualTo(new JobsMessage.ResultAck(SEED, 2, 9, false));
        assertThat(results.of("j")).singleElement().satisfies(r -> assertThat(r.data()).isEqualTo(data));
        assertThat(answer(new JobsMessage.Result(SEED, 3, 9, new byte[950]))).isEqualTo(error(WireError.RESULTS_FULL));
        assertThat(answer(new JobsMessage.Result(SEED, 3, 9, new byte[900])))
                .isEqualTo(new JobsMessage.ResultAck(SEED, 3, 9, true));
        assertThat(results.of("j")).extracting(StoredResult::step).containsExactly(2L, 3L);
    }

    @Test
    void refusalsAreErrorsWithTheirCode() {
        assertThat(answer(new JobsMessage.JobRequest(7, 0, 0))).isEqualTo(error(WireError.UNKNOWN_JOB));
        assertThat(answer(new JobsMessage.Result(7, 0, 0, new byte[0]))).isEqualTo(error(WireError.UNKNOWN_JOB));
        assertThat(answer(new JobsMessage.JobRequest(SEED, 0, 10))).isEqualTo(error(WireError.POSITION_OUT_OF_RANGE));
        assertThat(answer(new JobsMessage.JobRequest(SEED, 0, -1))).isEqualTo(error(WireError.POSITION_OUT_OF_RANGE));
        assertThat(answer(new JobsMessage.Result(SEED, 0, 10, new byte[0]))).isEqualTo(error(WireError.POSITION_OUT_OF_RANGE));
        assertThat(answer(new JobsMessage.JobResponse(SEED, 0, 0, new byte[0]))).isEqualTo(error(WireError.UNEXPECTED_OPCODE));
        assertThat(answer(new JobsMessage.ErrorFrame(1, "x"))).isEqualTo(error(WireError.UNEXPECTED_OPCODE));
        // this replica holds no copy of the dataset: retry elsewhere
        assertThat(answer(new JobsMessage.JobRequest(SEED, 0, 0))).isEqualTo(error(WireError.UNAVAILABLE));
    }

    private JobsMessage answer(JobsMessage m) {
        JobsMessage reply = protocol.answer(m).join();
        // compare errors by code: their text is for people
        return reply instanceof JobsMessage.ErrorFrame e ? new JobsMessage.ErrorFrame(e.code(), "") : reply;
    }

    private static JobsMessage error(WireError code) {
        return new JobsMessage.ErrorFrame(code.code(), "");
    }
}
