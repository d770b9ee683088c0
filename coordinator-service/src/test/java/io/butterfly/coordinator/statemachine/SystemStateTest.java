package io.butterfly.coordinator.statemachine;

import static io.butterfly.coordinator.statemachine.SystemState.*;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SystemStateTest {

    @Test
    void legalTransitionsOfTheSpecTable() {
        assertTrue(UNINITIALIZED.canTransitionTo(BOOTSTRAPPING));
        assertTrue(BOOTSTRAPPING.canTransitionTo(READY));
        assertTrue(READY.canTransitionTo(COMPUTING));
        assertTrue(COMPUTING.canTransitionTo(DEGRADED));
        assertTrue(COMPUTING.canTransitionTo(COMMITTING));
        assertTrue(COMMITTING.canTransitionTo(READY));
        assertTrue(DEGRADED.canTransitionTo(READY));
        assertTrue(DEGRADED.canTransitionTo(SHUTDOWN));
        assertTrue(COMPUTING.canTransitionTo(SHUTDOWN));
        assertTrue(READY.canTransitionTo(SHUTDOWN));
        assertTrue(SHUTDOWN.canTransitionTo(TERMINATED));
    }

    @Test
    void forbiddenTransitionsOfTheSpecTable() {
        assertFalse(UNINITIALIZED.canTransitionTo(READY));
        assertFalse(COMPUTING.canTransitionTo(READY));
        assertFalse(DEGRADED.canTransitionTo(COMPUTING));
        assertFalse(COMMITTING.canTransitionTo(DEGRADED));
        for (SystemState s : values()) {
            assertFalse(TERMINATED.canTransitionTo(s), "TERMINATED -> " + s);
            if (s != UNINITIALIZED && s != BOOTSTRAPPING) {
                assertFalse(s.canTransitionTo(BOOTSTRAPPING), s + " -> BOOTSTRAPPING");
            }
        }
    }

    @Test
    void onlyReadyAndComputingAcceptWork() {
        for (SystemState s : values()) {
            assertTrue(s.acceptsWork() == (s == READY || s == COMPUTING), s.name());
        }
    }
}
