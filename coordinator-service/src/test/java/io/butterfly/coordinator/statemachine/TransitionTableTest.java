package io.butterfly.coordinator.statemachine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TransitionTableTest {

    /** Every pair (from, to) of every machine: accepted exactly when the table lists it, rejected otherwise. */
    @Test
    void everyListedTransitionIsAcceptedAndEveryOtherPairRejected() {
        for (TransitionTable<?> table : StateMachines.ALL) {
            checkAllPairs(table);
        }
    }

    private static <S extends Enum<S>> void checkAllPairs(TransitionTable<S> table) {
        Set<List<S>> legal = new HashSet<>();
        table.transitions().forEach(t -> legal.add(List.of(t.from(), t.to())));
        for (S from : table.type().getEnumConstants()) {
            for (S to : table.type().getEnumConstants()) {
                if (legal.contains(List.of(from, to))) {
                    assertEquals(to, table.check(from, to).to());
                    assertTrue(table.isAllowed(from, to));
                } else {
                    IllegalTransitionException e = assertThrows(IllegalTransitionException.class,
                            () -> table.check(from, to), table.machine() + " " + from + "->" + to);
                    assertEquals(table.machine(), e.machine());
                    assertEquals(from.name(), e.from());
                    assertEquals(to.name(), e.to());
                    assertFalse(table.isAllowed(from, to));
                }
            }
        }
    }

    @Test
    void systemTableMatchesSpecSection13() {
        assertEquals(11, StateMachines.SYSTEM.transitions().size());
        assertEquals("bootstrap()",
                StateMachines.SYSTEM.check(SystemState.UNINITIALIZED, SystemState.BOOTSTRAPPING).trigger());
        assertEquals("result_committed()",
                StateMachines.SYSTEM.check(SystemState.COMMITTING, SystemState.READY).trigger());
    }

    @Test
    void forbiddenTransitionsReportTheSpecReason() {
        assertReason(SystemState.UNINITIALIZED, SystemState.READY, "Skips cluster formation");
        assertReason(SystemState.COMPUTING, SystemState.READY, "Skips result commitment");
        assertReason(SystemState.DEGRADED, SystemState.COMPUTING, "Cannot start new work during recovery");
        assertReason(SystemState.COMMITTING, SystemState.DEGRADED, "Agreement phase must complete atomically");
        for (SystemState to : SystemState.values()) {
            assertReason(SystemState.TERMINATED, to, "Terminal state");
        }
        assertReason(SystemState.READY, SystemState.BOOTSTRAPPING, "Cannot re-bootstrap running system");
        assertReason(SystemState.DEGRADED, SystemState.BOOTSTRAPPING, "Cannot re-bootstrap running system");
        // Not listed as forbidden, merely absent from the table: no reason.
        IllegalTransitionException e = assertThrows(IllegalTransitionException.class,
                () -> StateMachines.SYSTEM.check(SystemState.READY, SystemState.COMMITTING));
        assertNull(e.reason());
    }

    private static void assertReason(SystemState from, SystemState to, String reasonStart) {
        IllegalTransitionException e = assertThrows(IllegalTransitionException.class,
                () -> StateMachines.SYSTEM.check(from, to));
        assertTrue(e.reason() != null && e.reason().startsWith(reasonStart), from + "->" + to + ": " + e.reason());
        assertTrue(e.getMessage().contains("system") && e.getMessage().contains(from + " -> " + to));
    }

    @Test
    void legalAndForbiddenMustNotOverlap() {
        assertThrows(IllegalArgumentException.class, () -> new TransitionTable<>("x", SystemState.class,
                SystemState.UNINITIALIZED,
                List.of(new Transition<>(SystemState.READY, SystemState.SHUTDOWN, "t()")),
                List.of(new ForbiddenTransition<>(SystemState.READY, null, "no"))));
    }

    @Test
    void mermaidIsGeneratedFromTheTable() {
        String text = StateMachines.SYSTEM.mermaid();
        assertTrue(text.startsWith("stateDiagram-v2\n"));
        assertTrue(text.contains("[*] --> UNINITIALIZED"));
        for (Transition<SystemState> t : StateMachines.SYSTEM.transitions()) {
            assertTrue(text.contains(t.from() + " --> " + t.to() + " : " + t.trigger()), t.toString());
        }
        assertEquals(StateMachines.SYSTEM.transitions().size() + 2, text.lines().count() - 1);
    }
}
