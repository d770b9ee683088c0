package io.butterfly.coordinator.config;

import io.butterfly.common.tls.ClusterTls;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.raft.ReplicaSettings;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.util.unit.DataSize;

/** butterfly.coordinator.raft to replica settings: the embedded default and an explicit group of three. */
class RaftConfigurationTest {

    private static CoordinatorProperties coordinator(String nodeId) {
        return new CoordinatorProperties(nodeId, "127.0.0.1", "butterfly", "demo", 3, "127.0.0.1", 9082, "127.0.0.1",
                9081, Path.of("/tmp/coord"), 1024, 4096, 65536, 120, java.time.Duration.ofMinutes(30), List.of(), 1024);
    }

    private static ControlRaftProperties raft(String peerId, List<String> peers) {
        return raft(peerId, peers, "");
    }

    private static ControlRaftProperties raft(String peerId, List<String> peers, String bindHost) {
        return new ControlRaftProperties(peerId, peers, 20, "", Duration.ofMillis(150), Duration.ofMillis(300), 1000,
                Duration.ofSeconds(5), List.of(), bindHost, DataSize.ofMegabytes(8), 1000);
    }

    @Test
    void defaultIsOneReplicaAtTheGrpcPortPlusTwentyStoringUnderTheDataDir() {
        ReplicaSettings s = RaftConfiguration.settings(coordinator("coordinator-0"), raft("", List.of()), 9080, ClusterTls.PLAINTEXT);
        assertEquals("coordinator-0", s.selfId());
        assertEquals(List.of(new ReplicaSettings.Peer("coordinator-0", "127.0.0.1", 9100)), s.peers());
        assertEquals(Path.of("/tmp/coord/raft"), s.storageDir());
        assertEquals("butterfly", s.groupName());
        assertEquals(ReplicaSettings.LogRetention.DEFAULT, s.logRetention());
    }

    @Test
    void logRetentionRefusesASegmentUnder1KbANegativePreservationAndNoSnapshots() {
        assertThrows(IllegalArgumentException.class, () -> new ReplicaSettings.LogRetention(1023, 0));
        assertThrows(IllegalArgumentException.class, () -> new ReplicaSettings.LogRetention(1024, -1));
        ControlRaftProperties noSnapshots = new ControlRaftProperties("", List.of(), 20, "", Duration.ofMillis(150),
                Duration.ofMillis(300), 0, Duration.ofSeconds(5), List.of(), "", DataSize.ofMegabytes(8), 1000);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RaftConfiguration.settings(coordinator("coordinator-0"), noSnapshots, 9080, ClusterTls.PLAINTEXT));
        assertTrue(e.getMessage().contains("snapshot-threshold"), e.getMessage());
    }

    @Test
    void explicitPeersNameEveryReplicaAndMustIncludeThisOne() {
        List<String> peers = List.of("coordinator-0=127.0.0.1:9070", "coordinator-1=127.0.0.1:9071",
                "coordinator-2=10.0.0.3:9072");
        ReplicaSettings s = RaftConfiguration.settings(coordinator("coordinator-1"), raft("", peers), 9083, ClusterTls.PLAINTEXT);
        assertEquals("coordinator-1", s.selfId());
        assertEquals(new ReplicaSettings.Peer("coordinator-1", "127.0.0.1", 9071), s.self());
        assertEquals("10.0.0.3", s.peers().get(2).host());

        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> RaftConfiguration.settings(coordinator("coordinator-7"), raft("", peers), 9083, ClusterTls.PLAINTEXT));
        assertTrue(e.getMessage().contains("coordinator-7"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> RaftConfiguration.settings(coordinator("coordinator-0"),
                raft("", List.of("coordinator-0=127.0.0.1:9070", "coordinator-0=127.0.0.1:9071")), 9080, ClusterTls.PLAINTEXT));
    }

    @Test
    void theRaftServerListensOnItsPeerHostUnlessABindHostIsSet() {
        List<String> peers = List.of("c-0=c-0.pods.ns.svc.cluster.local:9070", "c-1=c-1.pods.ns.svc.cluster.local:9070");

        ReplicaSettings byName = RaftConfiguration.settings(coordinator("c-1"), raft("", peers), 9080, ClusterTls.PLAINTEXT);
        ReplicaSettings byIp = RaftConfiguration.settings(coordinator("c-1"), raft("", peers, "10.1.2.3"), 9080, ClusterTls.PLAINTEXT);

        assertEquals("c-1.pods.ns.svc.cluster.local", byName.listenHost());
        assertEquals("10.1.2.3", byIp.listenHost());
        // Peers still reach it by its name.
        assertEquals("c-1.pods.ns.svc.cluster.local", byIp.self().host());
    }

    @Test
    void malformedPeersAreRefusedWithTheOffendingEntry() {
        for (String bad : List.of("coordinator-0", "=127.0.0.1:1", "c0=127.0.0.1", "c0=127.0.0.1:x", "c0=host:70000")) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> ReplicaSettings.Peer.parse(bad));
            assertTrue(e.getMessage().contains(bad), e.getMessage());
        }
    }
}
