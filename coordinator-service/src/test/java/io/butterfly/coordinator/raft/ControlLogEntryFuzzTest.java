package io.butterfly.coordinator.raft;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.ClusterReducer;
import io.butterfly.coordinator.cluster.ClusterState;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import org.junit.jupiter.api.Timeout;

/**
 * A control-log entry as every replica's state machine applies it (docs/testing.md, fuzzing; a wire codec: the bytes
 * Raft replicates): any bytes are decoded ({@link ControlCommandMapper#deserialize}) and reduced against a fresh state
 * and a READY one, and either give a state or are refused as {@link ControlStateMachine#applyTransaction} refuses them
 * (IllegalArgumentException, IllegalTransitionException and its NotReadyException). Anything else escaping would fail the
 * replica's state machine on an entry that is already committed: every replica alike. A command decoded re-encodes to
 * bytes that decode to the same command.
 */
@Timeout(10)
class ControlLogEntryFuzzTest {

    private static final ClusterState READY = ready();

    @FuzzTest(maxDuration = "30s")
    void anyEntryIsAppliedOrRefused(byte[] entry) {
        ClusterCommand command;
        try {
            command = ControlCommandMapper.deserialize(entry);
        } catch (IllegalArgumentException refused) {
            return;
        }
        assertThat(ControlCommandMapper.deserialize(ControlCommandMapper.serialize(command))).isEqualTo(command);
        for (ClusterState before : new ClusterState[]{ClusterState.initial(), READY}) {
            try {
                ClusterState after = ClusterReducer.apply(before, command, before.lastAppliedIndex() + 1);
                assertThat(after).isNotNull();
            } catch (IllegalArgumentException | IllegalTransitionException refused) { // NotReadyException is one
                // refused as the state machine refuses it: INVALID_COMMAND, NOT_READY, ILLEGAL_TRANSITION
            }
        }
    }

    private static ClusterState ready() {
        InMemoryControlLog log = new InMemoryControlLog();
        ReadyCluster.bootstrap(log);
        return log.state();
    }
}
