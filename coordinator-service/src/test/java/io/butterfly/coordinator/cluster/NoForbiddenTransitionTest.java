package io.butterfly.coordinator.cluster;

import io.butterfly.coordinator.statemachine.IllegalTransitionException;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.statemachine.StateMachines;
import io.butterfly.coordinator.statemachine.SystemDeviations;
import io.butterfly.coordinator.statemachine.SystemState;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * 1000 seeded random command sequences of 200 commands through the reducer: the epoch never decreases and every
 * applied system change is in the docs/state-machines.md §1.3 table (COMPUTING -> READY only through COMMITTING within one command) or a
 * documented deviation; never one of docs/state-machines.md §1.4's forbidden transitions. Tasks do not move the
 * system: only a task submitted alone (a log written before tasks were recorded in batches) enters COMPUTING, and a
 * batch of task events changes the system state only to leave such a COMPUTING.
 */
class NoForbiddenTransitionTest {

    @Test
    void randomSequencesNeverApplyAForbiddenTransition() {
        Random rnd = new Random(42);
        int applied = 0;
        int recordedBatches = 0;
        for (int run = 0; run < 1000; run++) {
            ClusterState state = ClusterState.initial();
            long index = 0;
            for (int i = 0; i < 200; i++) {
                ClusterCommand c = EpochMonotonicTest.randomCommand(rnd, state, i);
                ClusterState before = state;
                try {
                    state = ClusterReducer.apply(state, c, index + 1);
                    index++;
                } catch (IllegalTransitionException e) {
                    assertEquals(before, state);
                    continue;
                }
                assertTrue(state.epoch() >= before.epoch(), "epoch decreased on " + c);
                SystemState from = before.system();
                SystemState to = state.system();
                if (to == SystemState.COMPUTING && from != to) {
                    assertTrue(c instanceof ClusterCommand.TaskSubmitted, "COMPUTING entered on " + c);
                }
                if (c instanceof ClusterCommand.TasksRecorded) {
                    assertTrue(from == to || (from == SystemState.COMPUTING && to == SystemState.READY),
                            from + " -> " + to + " on " + c);
                    recordedBatches++;
                }
                if (from != to) {
                    applied++;
                    boolean viaCommit = from == SystemState.COMPUTING && to == SystemState.READY;
                    assertTrue(StateMachines.SYSTEM.isAllowed(from, to) || SystemDeviations.reason(from, to) != null
                            || viaCommit, from + " -> " + to + " on " + c);
                    assertTrue(viaCommit || StateMachines.SYSTEM.forbiddenReason(from, to).isEmpty(),
                            "forbidden " + from + " -> " + to + " applied on " + c);
                }
            }
        }
        assertTrue(applied > 1000, "too few system transitions exercised: " + applied);
        assertTrue(recordedBatches > 1000, "too few task batches applied: " + recordedBatches);
    }

    @Test
    void reducerRefusesATransitionOutsideTheTableAndLeavesTheStateUnchanged() {
        ClusterState initial = ClusterState.initial();
        IllegalTransitionException e = assertThrows(IllegalTransitionException.class,
                () -> ClusterReducer.apply(initial, new ClusterCommand.Shutdown("x", 0), 1));
        assertTrue(e.getMessage().contains("system: illegal transition UNINITIALIZED -> SHUTDOWN"), e.getMessage());
        assertEquals(SystemState.UNINITIALIZED, initial.system());
    }
}
