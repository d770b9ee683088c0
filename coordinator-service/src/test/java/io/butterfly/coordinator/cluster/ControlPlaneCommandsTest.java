package io.butterfly.coordinator.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.statemachine.SystemState;
import org.junit.jupiter.api.Test;

/** The docs/bootstrap-protocol.md §5.3 control-plane entries: Checkpoint records the served epoch and root; NoOp only moves the index. */
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

    @Test
    void aConfigChangeIsCommittedAndReplacesTheLastOne() {
        Fixtures f = Fixtures.ready();
        ClusterConfig first = new ClusterConfig("butterfly", 3, 1, 3, "1.0.0");
        ClusterConfig second = new ClusterConfig("butterfly", 3, 1, 4, "1.0.0");
        assertThat(f.apply(new ClusterCommand.ConfigChange(first, 100)).state().config()).isEqualTo(first);
        ClusterState after = f.apply(new ClusterCommand.ConfigChange(second, 101)).state();
        assertThat(after.config()).isEqualTo(second);
        assertThat(after.system()).isEqualTo(SystemState.READY); // configuration is not a state transition
    }

    @Test
    void anImpossibleConfigChangeIsRefusedAndChangesNothing() {
        Fixtures f = Fixtures.ready();
        ClusterConfig good = new ClusterConfig("butterfly", 3, 0, 3, "1.0.0");
        f.apply(new ClusterCommand.ConfigChange(good, 100));
        ClusterState before = f.state();
        assertThatThrownBy(() -> f.apply(new ClusterCommand.ConfigChange(new ClusterConfig("butterfly", 0, 0, 3, "1.0.0"), 101)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("quorum_size");
        assertThatThrownBy(() -> f.apply(new ClusterCommand.ConfigChange(new ClusterConfig("butterfly", 3, 2, 3, "1.0.0"), 102)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("max_byzantine");
        assertThatThrownBy(() -> f.apply(new ClusterCommand.ConfigChange(new ClusterConfig(" ", 3, 0, 3, "1.0.0"), 103)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cluster_name");
        assertThat(f.state().config()).isEqualTo(before.config());
    }
}
