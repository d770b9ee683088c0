package io.butterfly.coordinator.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The §5.3 control-plane entries: Checkpoint records the served epoch and root; NoOp only moves the index. */
class ControlPlaneCommandsTest {

    @Test
    void aCheckpointOfTheCurrentEpochAndRootIsRecordedNamedByItsIndex() {
        Fixtures f = Fixtures.ready();
        long index = f.nextIndex();
        ClusterState s = f.apply(new ClusterCommand.Checkpoint(1, Fixtures.ROOT, 100)).state();
        assertThat(s.checkpoints()).singleElement().satisfies(c -> {
            assertThat(c.id()).isEqualTo("ckpt-" + index);
            assertThat(c.epoch()).isEqualTo(1);
            assertThat(c.merkleRoot()).isEqualTo(Fixtures.ROOT);
            assertThat(c.logIndex()).isEqualTo(index);
            assertThat(c.atMs()).isEqualTo(100);
        });
        assertThat(s.system()).isEqualTo(SystemState.READY);
    }

    @Test
    void aCheckpointOfAnotherEpochOrRootIsRefused() {
        Fixtures f = Fixtures.ready();
        assertThatThrownBy(() -> f.apply(new ClusterCommand.Checkpoint(2, Fixtures.ROOT, 100)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("epoch 2");
        assertThatThrownBy(() -> f.apply(new ClusterCommand.Checkpoint(1, "other-root", 100)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("other-root");
        assertThatThrownBy(() -> Fixtures.joined().apply(new ClusterCommand.Checkpoint(0, Fixtures.ROOT, 100)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void onlyTheNewestCheckpointsAreKept() {
        Fixtures f = Fixtures.ready();
        for (int i = 0; i < ClusterState.MAX_CHECKPOINTS + 5; i++) {
            f.apply(new ClusterCommand.Checkpoint(1, Fixtures.ROOT, 100 + i));
        }
        assertThat(f.state().checkpoints()).hasSize(ClusterState.MAX_CHECKPOINTS);
        assertThat(f.state().checkpoints().get(ClusterState.MAX_CHECKPOINTS - 1).atMs())
                .isEqualTo(100 + ClusterState.MAX_CHECKPOINTS + 4);
    }

    @Test
    void aNoOpChangesNothingButTheIndex() {
        Fixtures f = Fixtures.ready();
        ClusterState before = f.state();
        ClusterState after = f.apply(new ClusterCommand.NoOp("coordinator-1", 7, 100)).state();
        assertThat(after.lastAppliedIndex()).isEqualTo(before.lastAppliedIndex() + 1);
        assertThat(after.withIndex(before.lastAppliedIndex())).isEqualTo(before);
    }
}
