package io.butterfly.coordinator.control;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** Leader-only work may run only between notifyLeaderReady and losing the leadership. */
class LeadershipEventsTest {

    @Test
    void leadingOnlyOnceReadyAndUntilAnotherLeaderOrStepDown() throws InterruptedException {
        try (LeadershipEvents events = new LeadershipEvents("c0")) {
            List<Leadership> heard = new CopyOnWriteArrayList<>();
            events.addListener(heard::add);
            assertFalse(events.leading());

            events.leaderChanged("c0", 1);
            assertFalse(events.leading(), "elected but its first entry is not committed yet");
            events.leaderReady(1);
            assertTrue(events.leading());

            events.leaderChanged(null, 2); // an election started
            assertFalse(events.leading());
            events.leaderChanged("c1", 2);
            assertFalse(events.leading());
            assertEquals("c1", events.current().leaderId());

            events.leaderChanged("c0", 3);
            events.leaderReady(3);
            assertTrue(events.leading());
            events.notLeader(3);
            assertFalse(events.leading());

            long deadline = System.currentTimeMillis() + 5000;
            while (heard.size() < 8 && System.currentTimeMillis() < deadline) {
                Thread.sleep(5);
            }
            // Listeners hear the initial view and then every change, in order.
            assertEquals(List.of(false, false, true, false, false, false, true, false),
                    heard.stream().map(Leadership::leading).toList());
            assertEquals(List.of(0L, 1L, 1L, 2L, 2L, 3L, 3L, 3L), heard.stream().map(Leadership::term).toList());
        }
    }
}
