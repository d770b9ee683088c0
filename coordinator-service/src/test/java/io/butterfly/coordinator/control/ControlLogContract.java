package io.butterfly.coordinator.control;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import io.butterfly.coordinator.cluster.NotReadyException;
import io.butterfly.coordinator.statemachine.SystemState;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * What every control log does, whatever replicates it; run on the in-memory log the unit tests use
 * ({@link InMemoryControlLogTest}) and on a real Raft replica (raft.RaftControlLogIT), so the one stands for the other.
 */
public abstract class ControlLogContract {

    /** The log under test: one replica that leads, in its initial state. */
    protected abstract ControlLog control();

    private record Applied(ClusterState before, ClusterState after, ClusterCommand command, long index) {
    }

    private final List<Applied> heard = new CopyOnWriteArrayList<>();

    private void listen() {
        control().onApplied((before, after, command, index) -> heard.add(new Applied(before, after, command, index)));
    }

    @Test
    void anAppliedCommandIsTheNewStateItsListenersHearAndItsTransitionIsJournaled() {
        listen();
        ClusterCommand bootstrap = new ClusterCommand.Bootstrap("m", 1, 10);

        ClusterState after = control().submit(bootstrap);

        assertThat(after.system()).isEqualTo(SystemState.BOOTSTRAPPING);
        assertThat(control().state()).isEqualTo(after);
        assertThat(heard).singleElement().satisfies(a -> {
            assertThat(a.before().system()).isEqualTo(SystemState.UNINITIALIZED);
            assertThat(a.after()).isEqualTo(after);
            assertThat(a.command()).isEqualTo(bootstrap);
            assertThat(a.index()).isEqualTo(after.lastAppliedIndex());
        });
        assertThat(control().transitions(10)).singleElement().satisfies(t -> {
            assertThat(t.machine()).isEqualTo("system");
            assertThat(t.from()).isEqualTo("UNINITIALIZED");
            assertThat(t.to()).isEqualTo("BOOTSTRAPPING");
            assertThat(t.trigger()).isEqualTo("Bootstrap");
            assertThat(t.logIndex()).isEqualTo(after.lastAppliedIndex());
        });
    }

    @Test
    void aRefusedTransitionIsThrownAndLeavesTheStateUntouched() {
        ClusterState bootstrapping = control().submit(new ClusterCommand.Bootstrap("m", 1, 10));
        listen();

        assertThatThrownBy(() -> control().submit(new ClusterCommand.Bootstrap("other", 2, 20)))
                .isExactlyInstanceOf(IllegalTransitionException.class);

        assertThat(control().state()).isEqualTo(bootstrapping);
        assertThat(heard).isEmpty();
        assertThat(control().transitions(10)).hasSize(1);
        // The log goes on from the refused command.
        assertThat(control().submit(new ClusterCommand.Shutdown("bye", 30)).system()).isEqualTo(SystemState.SHUTDOWN);
        assertThat(heard).hasSize(1);
    }

    @Test
    void newWorkWhileNotServingIsRefusedAsNotReady() {
        ClusterState bootstrapping = control().submit(new ClusterCommand.Bootstrap("m", 1, 10));

        assertThatThrownBy(() -> control().submit(new ClusterCommand.TaskSubmitted("t", 3, "coordinator-0", 1, 20)))
                .isInstanceOf(NotReadyException.class).hasMessageContaining("not READY");

        assertThat(control().state()).isEqualTo(bootstrapping);
    }

    @Test
    void anInvalidCommandIsRefusedAsInvalid() {
        ClusterState bootstrapping = control().submit(new ClusterCommand.Bootstrap("m", 1, 10));

        assertThatThrownBy(() -> control().submit(new ClusterCommand.Checkpoint(3, "root", 20)))
                .isExactlyInstanceOf(IllegalArgumentException.class).hasMessageContaining("checkpoint of epoch 3");

        assertThat(control().state()).isEqualTo(bootstrapping);
    }

    @Test
    void aLoneReplicaLeadsAndSaysSo() {
        Leadership l = control().leadership().current();
        assertThat(l.leading()).isTrue();
        assertThat(control().raftStatus().role()).isEqualTo("LEADER");
        assertThat(control().raftStatus().leaderId()).isEqualTo(l.selfId());
        assertThat(control().replicaViews()).singleElement().satisfies(v -> {
            assertThat(v.replicaId()).isEqualTo(l.selfId());
            assertThat(v.leader()).isTrue();
            assertThat(v.term()).isEqualTo(l.term());
        });
    }
}
