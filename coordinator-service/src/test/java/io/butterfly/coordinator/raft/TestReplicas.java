package io.butterfly.coordinator.raft;

import io.butterfly.common.tls.ClusterTls;
import io.butterfly.testsupport.Ports;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.apache.ratis.util.ExitUtils;

/** Real Ratis replicas on loopback for tests (temporary storage, free ports). */
public final class TestReplicas {

    static {
        // Ratis calls System.exit when its gRPC server cannot bind its port, which would end the whole test fork;
        // in tests it throws instead, so a replica whose port was taken can be started again (Ports.taken).
        ExitUtils.disableSystemExit();
    }

    private TestReplicas() {
    }

    public static ReplicaSettings settings(String selfId, List<ReplicaSettings.Peer> peers, Path storage,
                                           long snapshotThreshold) {
        return settings(selfId, peers, storage, snapshotThreshold, ReplicaSettings.LogRetention.DEFAULT);
    }

    public static ReplicaSettings settings(String selfId, List<ReplicaSettings.Peer> peers, Path storage,
                                           long snapshotThreshold, ReplicaSettings.LogRetention retention) {
        return new ReplicaSettings(selfId, peers, "test", storage, Duration.ofMillis(150), Duration.ofMillis(300),
                snapshotThreshold, Duration.ofSeconds(5), null, retention, ClusterTls.PLAINTEXT);
    }

    /** A started one-replica group that already leads (as on the embedded default). */
    public static ControlReplica single(Path storage) {
        // Ratis needs the port number up front (its peers and clients are addressed by it), so another process may
        // bind it first: then the replica is started again on another port.
        ControlReplica replica = Ports.startOnFreePorts(1, ports -> {
            ReplicaSettings.Peer self = new ReplicaSettings.Peer("coordinator-0", "127.0.0.1", ports.get(0));
            return start(settings(self.id(), List.of(self), storage, 1000));
        });
        awaitLeading(replica, Duration.ofSeconds(10));
        return replica;
    }

    /** Starts a replica; a failure to start (its port taken, say) is unchecked, for {@link Ports#startOnFreePorts}. */
    public static ControlReplica start(ReplicaSettings settings) {
        try {
            return ControlReplica.start(settings);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public static void awaitLeading(ControlReplica replica, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!replica.leadership().leading()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("replica " + replica.settings().selfId() + " did not become leader");
            }
            sleep(10);
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
