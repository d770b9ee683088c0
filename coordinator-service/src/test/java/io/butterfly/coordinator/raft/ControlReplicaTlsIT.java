package io.butterfly.coordinator.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.identity.NodeRole;
import io.butterfly.common.identity.PeerIdentity;
import io.butterfly.common.pki.ClusterCa;
import io.butterfly.common.tls.ClusterTls;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import io.butterfly.testsupport.Ports;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Raft over mutual TLS: a group of coordinators with certificates from one CA elects a leader and commits; a
 * replica whose certificate names a worker (same CA) is shut out of the group.
 */
class ControlReplicaTlsIT {

    private static final ClusterCa CA = ClusterCa.create("test CA", Duration.ofDays(1));

    @TempDir
    Path dir;

    @Test
    void coordinatorsCommitOverMutualTlsAndAWorkersCertificateIsShutOut() {
        List<ControlReplica> replicas = new ArrayList<>();
        try {
            Ports.startOnFreePorts(3, ports -> {
                List<ReplicaSettings.Peer> peers = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    peers.add(new ReplicaSettings.Peer("coordinator-" + i, "127.0.0.1", ports.get(i)));
                }
                for (int i = 0; i < 2; i++) {
                    replicas.add(TestReplicas.start(settings(peers, i, NodeRole.COORDINATOR)));
                }
                // the third replica's certificate names a worker: its peers' trust manager refuses it, and it theirs
                replicas.add(TestReplicas.start(settings(peers, 2, NodeRole.WORKER)));
                return replicas;
            });
            ControlReplica leader = awaitLeader(replicas.subList(0, 2));
            leader.submit(new ClusterCommand.Bootstrap("model", 2, 0L));
            ControlReplica follower = replicas.get(leader == replicas.get(0) ? 1 : 0);
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (follower.state().lastAppliedIndex() < leader.state().lastAppliedIndex() && System.nanoTime() < deadline) {
                TestReplicas.sleep(50);
            }
            assertThat(follower.state().lastAppliedIndex()).isEqualTo(leader.state().lastAppliedIndex());
            assertThat(replicas.get(2).state().lastAppliedIndex()).as("the worker's replica got nothing").isZero();
            assertThatThrownBy(() -> replicas.get(2).submit(new ClusterCommand.Bootstrap("model", 2, 0L)))
                    .isInstanceOf(ControlLogUnavailableException.class);
        } finally {
            replicas.forEach(ControlReplica::close);
        }
    }

    private ReplicaSettings settings(List<ReplicaSettings.Peer> peers, int i, NodeRole role) {
        String id = peers.get(i).id();
        ClusterTls tls = CA.issue(new PeerIdentity(role, id), List.of("127.0.0.1"), Duration.ofDays(1)).tls();
        ReplicaSettings plain = TestReplicas.settings(id, peers, dir.resolve(id), 1000);
        // Elections slower than the other group tests': each new link starts with a handshake, which a loaded
        // machine can stretch past a 300 ms election timeout. Requests time out after 8 s: the shut-out replica's
        // submit fails only then (it was 30 s, most of this test's time).
        return new ReplicaSettings(plain.selfId(), plain.peers(), plain.groupName(), plain.storageDir(),
                Duration.ofSeconds(1), Duration.ofSeconds(2), plain.snapshotThreshold(), Duration.ofSeconds(8),
                plain.bindHost(), plain.logRetention(), tls);
    }

    private static ControlReplica awaitLeader(List<ControlReplica> replicas) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            for (ControlReplica r : replicas) {
                if (r.leadership().leading()) {
                    return r;
                }
            }
            TestReplicas.sleep(20);
        }
        throw new AssertionError("no coordinator became leader over mutual TLS");
    }
}
