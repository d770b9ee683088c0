package io.butterfly.coordinator.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.raft.ClusterStateCodec;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A job's batches in the replicated state (docs/jobs.md): handed out in order, an expired lease first to the next
 * request, results committed once each, only for a batch handed out, within the job's budget, and all of it in the
 * snapshot.
 */
class JobWorkTest {

    private static final long ANY = JobWork.ANY_POSITION;
    private static final long LEASE = 1_000;

    private ClusterState state = ClusterState.initial();
    private long index;

    @Test
    void anyBatchGoesInOrderAndAnExpiredLeaseGoesToTheNextRequest() {
        define(new JobRecord("j", "ab".repeat(32), 10, 4, 42, 8, 0.7, 1, 0, 0, 1 << 20));
        assertThat(leaseAny(0, "a", 100)).isEqualTo(0);
        assertThat(leaseAny(0, "b", 100)).isEqualTo(4);
        assertThat(leaseAny(0, "c", 100)).isEqualTo(8);
        assertThat(leaseAny(1, "c", 100)).as("another step has its own batches").isEqualTo(0);
        assertThatThrownBy(() -> leaseAny(0, "d", 200)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("handed out");
        record(0, 4, "b's", 300);
        // a's lease (batch 0) ends at 1100: the next request for any batch of step 0 gets it, the same position
        assertThat(leaseAny(0, "d", 100 + LEASE)).isEqualTo(0);
        JobLease again = state.workOf("j").leases().get(JobWork.key(0, 0));
        assertThat(again.holder()).isEqualTo("d");
        assertThat(again.handouts()).isEqualTo(2);
        // a, back late, still answers first: its result is kept, and d's is then a repeat
        record(0, 0, "a's", 1200);
        assertThatThrownBy(() -> record(0, 0, "d's", 1300)).hasMessageContaining("already");
        record(0, 8, "c's", 1300);
        JobRecord job = state.jobs().get("j");
        assertThat(state.workOf("j").done(job, 0)).isEqualTo(10);
        assertThat(state.workOf("j").pending(job, 0, 1300)).isZero();
        assertThatThrownBy(() -> leaseAny(0, "e", 5000)).hasMessageContaining("answered or handed out");
        assertThat(new String(state.workOf("j").results().get(JobWork.key(0, 0)).data())).isEqualTo("a's");
    }

    @Test
    void aResultIsRefusedForABatchNeverHandedOutAndPastTheBudget() {
        define(new JobRecord("j", "ab".repeat(32), 100, 1, 42, 8, 0.7, 1, 0, 0, 2 * JobWork.RESULT_OVERHEAD_BYTES + 10));
        assertThatThrownBy(() -> record(0, 3, "x", 1)).hasMessageContaining("never handed out");
        apply(new ClusterCommand.JobBatchLeased("j", 0, 3, "h", LEASE, 1));
        apply(new ClusterCommand.JobBatchLeased("j", 0, 4, "h", LEASE, 1));
        apply(new ClusterCommand.JobBatchLeased("j", 0, 5, "h", LEASE, 1));
        record(0, 3, "12345", 2);
        record(0, 4, "12345", 2);
        assertThatThrownBy(() -> record(0, 5, "1", 3)).hasMessageContaining("max_result_bytes");
        assertThatThrownBy(() -> apply(new ClusterCommand.JobBatchLeased("j", 0, 100, "h", LEASE, 1)))
                .hasMessageContaining("past");
        assertThatThrownBy(() -> apply(new ClusterCommand.JobBatchLeased("nope", 0, 1, "h", LEASE, 1)))
                .hasMessageContaining("no job");
    }

    /** Random hand-outs and results against a model of what must hold; the state then survives a snapshot. */
    @Test
    void randomHandOutsAndResultsKeepEachResultOnceAndTheStateBounded() throws Exception {
        Random random = new Random(4848);
        long budget = 40 * (JobWork.RESULT_OVERHEAD_BYTES + 20);
        JobRecord job = new JobRecord("r", "cd".repeat(32), 37, 3, 7, 8, 1, 1, 0, 0, budget);
        define(job);
        Set<String> handedOut = new HashSet<>();
        Map<String, byte[]> kept = new HashMap<>();
        long now = 0;
        for (int i = 0; i < 3000; i++) {
            now += random.nextInt(300);
            long step = random.nextInt(3);
            if (random.nextInt(3) > 0) {
                long position = random.nextBoolean() ? ANY : random.nextInt(37);
                try {
                    String holder = "h" + i;
                    apply(new ClusterCommand.JobBatchLeased("r", step, position, holder, LEASE, now));
                    state.workOf("r").leases().values().stream().filter(l -> l.holder().equals(holder))
                            .forEach(l -> handedOut.add(JobWork.key(l.step(), l.position())));
                } catch (IllegalArgumentException busy) {
                    assertThat(position).isEqualTo(ANY);
                }
            } else {
                long position = random.nextInt(13) * 3L;
                String key = JobWork.key(step, position);
                byte[] data = new byte[random.nextInt(20)];
                random.nextBytes(data);
                long bytesBefore = state.workOf("r").resultBytes();
                try {
                    apply(new ClusterCommand.JobResultRecorded("r", step, position, data, now));
                    assertThat(handedOut).contains(key);
                    assertThat(kept.put(key, data)).isNull();
                } catch (IllegalArgumentException refused) {
                    assertThat(!handedOut.contains(key) || kept.containsKey(key)
                            || bytesBefore + data.length + JobWork.RESULT_OVERHEAD_BYTES > budget)
                            .as(refused.getMessage()).isTrue();
                }
            }
            JobWork work = state.workOf("r");
            assertThat(work.resultBytes()).isLessThanOrEqualTo(budget);
            assertThat(java.util.Collections.disjoint(work.leases().keySet(), work.results().keySet())).isTrue();
            for (long s = 0; s < 3; s++) {
                assertThat(work.done(job, s) + work.leased(job, s, now) + work.pending(job, s, now)).isEqualTo(37);
            }
        }
        assertThat(kept).isNotEmpty();
        kept.forEach((key, data) -> assertThat(Arrays.equals(state.workOf("r").results().get(key).data(), data)).isTrue());
        assertThat(ClusterStateCodec.decode(ClusterStateCodec.encode(state))).isEqualTo(state);
    }

    private void define(JobRecord job) {
        apply(new ClusterCommand.JobDefined(job, 0));
    }

    private long leaseAny(long step, String holder, long atMs) {
        apply(new ClusterCommand.JobBatchLeased("j", step, ANY, holder, LEASE, atMs));
        return state.workOf("j").leases().values().stream().filter(l -> l.holder().equals(holder) && l.step() == step)
                .findFirst().orElseThrow().position();
    }

    private void record(long step, long position, String data, long atMs) {
        apply(new ClusterCommand.JobResultRecorded("j", step, position, data.getBytes(), atMs));
    }

    private void apply(ClusterCommand c) {
        state = ClusterReducer.apply(state, c, ++index);
    }
}
