package io.butterfly.discovery.membership;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The static backend: seeds that answer are listed, silent ones are not; joined nodes take precedence. */
class StaticMembershipStoreTest {

    /** A clock the test moves by hand. */
    private static final class ManualClock extends Clock {
        final AtomicLong millis = new AtomicLong(1_000_000);

        @Override
        public java.time.ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(millis.get());
        }
    }

    /**
     * A port on 127.0.0.1 nobody listens on, for as long as the caller holds the socket: it is bound but never
     * listens, so connections to it are refused, and no other process can bind (and listen on) it meanwhile.
     * (A port found free and closed again could be taken by another process before the probe.)
     */
    private static Socket closedPort() throws IOException {
        Socket s = new Socket();
        s.bind(new InetSocketAddress("127.0.0.1", 0));
        return s;
    }

    @Test
    void parsesSeedsWithAndWithoutRole() {
        assertEquals(new StaticSeed("worker-0", "worker", "10.0.1.10", 9090), StaticSeed.parse(" worker-0=10.0.1.10:9090 "));
        assertEquals(new StaticSeed("coordinator-0", "coordinator", "coord.local", 9080),
                StaticSeed.parse("coordinator/coordinator-0=coord.local:9080"));
        for (String bad : List.of("worker-0", "=h:1", "w=h", "w=h:", "w=:1", "w=h:x", "w=h:0", "w=h:70000")) {
            assertThrows(IllegalArgumentException.class, () -> StaticSeed.parse(bad), bad);
        }
    }

    @Test
    void listsReachableSeedsAndJoinedNodesButNotSilentSeeds() throws IOException {
        ManualClock clock = new ManualClock();
        try (ServerSocket up = new ServerSocket(0, 8, InetAddress.getLoopbackAddress()); Socket closed = closedPort()) {
            int down = closed.getLocalPort();
            List<StaticSeed> seeds = List.of(
                    StaticSeed.parse("worker-up=127.0.0.1:" + up.getLocalPort()),
                    StaticSeed.parse("worker-down=127.0.0.1:" + down),
                    StaticSeed.parse("coordinator/coordinator-0=127.0.0.1:" + up.getLocalPort()),
                    StaticSeed.parse("worker-joined=127.0.0.1:" + down));
            StaticMembershipStore store = new StaticMembershipStore(new MembershipRegistry(), seeds,
                    SeedProbe.tcpConnect(Duration.ofMillis(300)), Duration.ofSeconds(2), clock);

            // worker-joined's seed port is closed, but it joined (maybe from another address): it is listed as ACTIVE.
            store.admit(new MemberView("worker-joined", "worker", "127.0.0.1", 9999, 0, "0.1.0", 5, 5, null, "cd".repeat(32), false));
            store.acknowledge("worker-joined", 6);
            store.admit(new MemberView("worker-pending", "worker", "127.0.0.1", 9998, 0, "0.1.0", 5, 5, null, "ef".repeat(32), false));

            List<MemberView> all = store.members(null);
            assertEquals(List.of("coordinator-0", "worker-joined", "worker-up"), all.stream().map(MemberView::nodeId).toList());
            assertEquals(List.of(MemberState.REACHABLE, MemberState.ACTIVE, MemberState.REACHABLE),
                    all.stream().map(MemberView::state).toList());
            assertEquals(List.of("worker-joined", "worker-up"), store.members("worker").stream().map(MemberView::nodeId).toList());
            assertEquals(2, store.size(), "only joined nodes hold admission slots");
            assertTrue(store.member("worker-up").isEmpty(), "a seed has no signed identity until it joins");
        }
    }

    @Test
    void probeResultsAreReusedForTheIntervalThenRechecked() {
        ManualClock clock = new ManualClock();
        List<String> probed = new ArrayList<>();
        boolean[] answers = {true};
        StaticMembershipStore store = new StaticMembershipStore(new MembershipRegistry(),
                List.of(StaticSeed.parse("worker-0=10.0.0.1:9090")), seed -> {
                    probed.add(seed.nodeId());
                    return answers[0];
                }, Duration.ofSeconds(2), clock);

        assertEquals(1, store.members(null).size());
        answers[0] = false;
        clock.millis.addAndGet(1_999);
        assertEquals(1, store.members(null).size(), "within the interval the last answer stands");
        assertEquals(1, probed.size());
        clock.millis.addAndGet(1);
        assertEquals(0, store.members(null).size(), "after it the seed is probed again and is gone");
        assertEquals(2, probed.size());
    }
}
