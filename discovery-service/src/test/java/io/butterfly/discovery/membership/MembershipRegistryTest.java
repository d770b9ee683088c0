package io.butterfly.discovery.membership;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The in-memory member table of the static and consul backends forgets members that stop heartbeating, as the
 * embedded backend's entries do: a crashed node was listed ACTIVE for ever, and joins that were never
 * acknowledged held capacity slots for ever, so a burst of them left the cluster full.
 */
class MembershipRegistryTest {

    private static final class ManualClock extends Clock {
        final AtomicLong millis = new AtomicLong(1_000_000);

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(millis.get());
        }
    }

    private static MemberView joined(String id, long nowMs) {
        return new MemberView(id, "worker", "127.0.0.1", 9090, 8080, "test", nowMs, nowMs, null, "ab", false);
    }

    @Test
    void membersThatStopHeartbeatingExpireAndHeartbeatsKeepTheOthers() {
        ManualClock clock = new ManualClock();
        MembershipRegistry registry = new MembershipRegistry(clock, Duration.ofSeconds(30));
        long t0 = clock.millis();
        registry.admit(joined("alive", t0));
        registry.acknowledge("alive", t0);
        registry.admit(joined("crashed", t0));
        registry.acknowledge("crashed", t0);
        registry.admit(joined("never-acked", t0));
        assertEquals(3, registry.size());

        for (int i = 0; i < 10; i++) { // 50 s of heartbeats from "alive" only
            clock.millis.addAndGet(5_000);
            assertTrue(registry.touch("alive", clock.millis()).isPresent());
        }

        assertEquals(1, registry.size(), "expired members hold no capacity slot");
        assertEquals(1, registry.members(null).size());
        assertEquals("alive", registry.members(null).get(0).nodeId());
        assertTrue(registry.member("crashed").isEmpty());
        assertTrue(registry.touch("crashed", clock.millis()).isEmpty(), "its next heartbeat is NOT_FOUND: it joins again");
        assertTrue(registry.acknowledge("never-acked", clock.millis()).isEmpty());
    }
}
