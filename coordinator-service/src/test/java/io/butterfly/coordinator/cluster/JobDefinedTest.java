package io.butterfly.coordinator.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.raft.ClusterStateCodec;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Batch jobs in the replicated state (docs/jobs.md): defined once, named uniquely by id and by seed, snapshotted. */
class JobDefinedTest {

    @Test
    void jobsAreKeptInDefinitionOrderAndSurviveASnapshot() throws Exception {
        Random random = new Random(48);
        ClusterState s = ClusterState.initial();
        for (int i = 0; i < 20; i++) {
            s = ClusterReducer.apply(s, new ClusterCommand.JobDefined(job("job-" + i, random.nextLong()), 5), i + 1);
        }
        assertThat(s.jobs().keySet()).containsExactlyElementsOf(
                java.util.stream.IntStream.range(0, 20).mapToObj(i -> "job-" + i).toList());
        assertThat(ClusterStateCodec.decode(ClusterStateCodec.encode(s))).isEqualTo(s);
    }

    @Test
    void aSecondJobWithTheSameIdOrSeedIsRefused() {
        ClusterState s = ClusterReducer.apply(ClusterState.initial(), new ClusterCommand.JobDefined(job("a", -7), 1), 1);
        ClusterState defined = s;
        assertThatThrownBy(() -> ClusterReducer.apply(defined, new ClusterCommand.JobDefined(job("a", 8), 2), 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("exists");
        assertThatThrownBy(() -> ClusterReducer.apply(defined, new ClusterCommand.JobDefined(job("b", -7), 2), 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("18446744073709551609");
        assertThat(ClusterReducer.apply(defined, new ClusterCommand.JobDefined(job("b", 8), 2), 2).jobs()).hasSize(2);
    }

    @Test
    void aJobOutsideItsBoundsCannotBeMade() {
        assertThatThrownBy(() -> new JobRecord("A", "ab".repeat(32), 1, 1, 0, 1, 0, 1, 0, 0))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new JobRecord("a", "AB".repeat(32), 1, 1, 0, 1, 0, 1, 0, 0))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new JobRecord("a", "ab".repeat(32), 1, 0, 0, 1, 0, 1, 0, 0))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new JobRecord("a", "ab".repeat(32), 1, 1, 0, 1, Double.NaN, 1, 0, 0))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new JobRecord("a", "ab".repeat(32), 1, 1, 0, 1, 0, 0, 0, 0))
                .isInstanceOf(IllegalArgumentException.class);
    }

    static JobRecord job(String id, long seed) {
        return new JobRecord(id, "ab".repeat(32), 10, 4, seed, 8, 0.7, 0.9, 0, 5);
    }
}
