package io.butterfly.discovery.hazelcast;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.discovery.api.grpc.ControlMessages;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import io.butterfly.testsupport.Ports;
import io.butterfly.discovery.api.grpc.NodeCapabilitiesJson;
import io.butterfly.discovery.membership.Capabilities;
import io.butterfly.discovery.config.DiscoveryProperties;
import io.butterfly.discovery.config.HazelcastConfiguration;
import io.butterfly.discovery.membership.MemberState;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.proto.common.v1.NodeCapabilities;
import io.butterfly.proto.common.v1.StorageType;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Two discovery replicas' stores, each on its own embedded Hazelcast member (loopback, configured exactly as the
 * service configures it): what one replica records, the other lists; a member that goes silent expires.
 */
class HazelcastMembershipStoreTest {

    private static final Duration TTL = Duration.ofSeconds(2);
    private static final NodeCapabilitiesJson CODEC = new NodeCapabilitiesJson();
    private static HazelcastInstance first;
    private static HazelcastInstance second;

    @BeforeAll
    static void twoReplicas() {
        // A unique cluster name: replicas of another test run or a launcher cluster on this machine never merge in.
        String cluster = "butterfly-test-" + UUID.randomUUID();
        // Two distinct ports (both members are named in the join list up front); if either was taken before its
        // member bound it, both start again on new ones.
        Ports.startOnFreePorts(2, ports -> {
            List<String> members = ports.stream().map(p -> "127.0.0.1:" + p).toList();
            // The second's port is held (refusing connections) while the first starts: had another process taken it
            // and listened there, the first member's join would wait on it for its whole join timeout (5 min).
            first = Ports.whileHeld(ports.get(1), () -> member(cluster, "replica-a", ports.get(0), members));
            try {
                second = member(cluster, "replica-b", ports.get(1), members);
            } catch (RuntimeException e) {
                first.shutdown();
                first = null;
                throw e;
            }
            return second;
        });
        assertEquals(2, second.getCluster().getMembers().size(), "the two replicas form one Hazelcast cluster");
    }

    private static HazelcastInstance member(String cluster, String name, int port, List<String> members) {
        return Hazelcast.newHazelcastInstance(HazelcastConfiguration.hazelcastConfig(cluster, name,
                new DiscoveryProperties.Hazelcast(port, "127.0.0.1", members), TTL));
    }

    @AfterAll
    static void stop() {
        if (second != null) {
            second.shutdown();
        }
        if (first != null) {
            first.shutdown();
        }
    }

    private static MemberView worker(String id, long now) {
        Capabilities caps = ControlMessages.capabilities(NodeCapabilities.newBuilder().setCpuCores(8)
                .setMemoryBytes(16L << 30).setMeasuredGflops(42.5).setMemoryBandwidthGbps(20).setStorageType(StorageType.SSD)
                .setDevice("cpu").build());
        return new MemberView(id, "worker", "127.0.0.1", 9090, 8090, "0.1.0", now, now, caps, "ab".repeat(32), false);
    }

    @Test
    void aMessageIdAcceptedByOneReplicaIsARefusedReplayAtTheOther() {
        var a = new io.butterfly.discovery.admission.MessageIdReplayGuard(60_000, new HazelcastSeenMessageIds(first));
        var b = new io.butterfly.discovery.admission.MessageIdReplayGuard(60_000, new HazelcastSeenMessageIds(second));
        var envelope = io.butterfly.proto.common.v1.SignedEnvelope.newBuilder().setSender("worker-replayed")
                .setMessageId(UUID.randomUUID().getMostSignificantBits()).build();
        long now = System.currentTimeMillis();

        a.check(ControlMessages.read(envelope), now);
        org.junit.jupiter.api.Assertions.assertThrows(io.butterfly.discovery.membership.AdmissionException.class,
                () -> b.check(ControlMessages.read(envelope), now + 10));
        // Another id from the same sender is fine at either replica.
        b.check(ControlMessages.read(envelope.toBuilder().setMessageId(envelope.getMessageId() + 1).build()), now + 20);
    }

    @Test
    void aMemberAdmittedByOneReplicaIsListedByTheOther() {
        HazelcastMembershipStore a = new HazelcastMembershipStore(first, Duration.ofMinutes(5), CODEC);
        HazelcastMembershipStore b = new HazelcastMembershipStore(second, Duration.ofMinutes(5), CODEC);
        long now = System.currentTimeMillis();

        a.admit(worker("worker-shared", now));
        assertTrue(b.member("worker-shared").isPresent(), "the pending member is visible to the other replica");
        assertFalse(b.members(null).stream().anyMatch(m -> m.nodeId().equals("worker-shared")), "not listed before JOIN_ACK");

        b.acknowledge("worker-shared", now + 10); // the ack may reach the other replica
        MemberView listed = a.members("worker").stream().filter(m -> m.nodeId().equals("worker-shared")).findFirst().orElseThrow();
        assertEquals(MemberState.ACTIVE, listed.state());
        assertEquals(now + 10, listed.lastSeenMs());
        assertEquals(worker("x", now).capabilities(), listed.capabilities(), "capabilities survive the JSON round trip");
        assertEquals("ab".repeat(32), listed.publicKeyHex());
        assertTrue(a.members("coordinator").stream().noneMatch(m -> m.nodeId().equals("worker-shared")));

        // A rejoin keeps the first join time and is pending again.
        a.admit(worker("worker-shared", now + 1000));
        assertEquals(now, b.member("worker-shared").orElseThrow().joinedAtMs());
        assertFalse(b.member("worker-shared").orElseThrow().acknowledged());

        assertTrue(b.leave("worker-shared"));
        assertTrue(a.member("worker-shared").isEmpty(), "a leave through one replica is seen by the other");
        assertFalse(a.leave("worker-shared"));
    }

    @Test
    void aMemberThatStopsHeartbeatingDropsOutWhileAHeartbeatingOneStays() throws InterruptedException {
        HazelcastMembershipStore a = new HazelcastMembershipStore(first, TTL, CODEC);
        HazelcastMembershipStore b = new HazelcastMembershipStore(second, TTL, CODEC);
        long start = System.currentTimeMillis();
        for (String id : List.of("worker-silent", "worker-beating")) {
            a.admit(worker(id, start));
            a.acknowledge(id, start);
        }
        assertEquals(List.of("worker-beating", "worker-silent"), listedIds(b));

        // Heartbeats through alternating replicas every 0.5 s, for three TTLs.
        long deadline = start + 3 * TTL.toMillis();
        int beat = 0;
        while (System.currentTimeMillis() < deadline) {
            Thread.sleep(500);
            long now = System.currentTimeMillis();
            assertTrue((beat++ % 2 == 0 ? a : b).touch("worker-beating", now).isPresent(), "a heartbeating member is kept");
        }
        assertEquals(List.of("worker-beating"), listedIds(a), "the silent member expired");
        assertEquals(List.of("worker-beating"), listedIds(b));
        assertTrue(b.touch("worker-silent", System.currentTimeMillis()).isEmpty(),
                "its late heartbeat finds no entry (NOT_FOUND: the node joins again)");
        a.leave("worker-beating");
    }

    private static List<String> listedIds(HazelcastMembershipStore store) {
        return store.members(null).stream().map(MemberView::nodeId).filter(id -> id.startsWith("worker-")).toList();
    }
}
