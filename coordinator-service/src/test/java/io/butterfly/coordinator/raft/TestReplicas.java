package io.butterfly.coordinator.raft;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/** Real Ratis replicas on loopback for tests (temporary storage, free ports). */
public final class TestReplicas {

    private TestReplicas() {
    }

    public static ReplicaSettings settings(String selfId, List<ReplicaSettings.Peer> peers, Path storage,
                                           long snapshotThreshold) {
        return new ReplicaSettings(selfId, peers, "test", storage, Duration.ofMillis(150), Duration.ofMillis(300),
                snapshotThreshold, Duration.ofSeconds(5), null);
    }

    /** A started one-replica group that already leads (as on the embedded default). */
    public static ControlReplica single(Path storage) {
        try {
            ReplicaSettings.Peer self = new ReplicaSettings.Peer("coordinator-0", "127.0.0.1", freePort());
            ControlReplica replica = ControlReplica.start(settings(self.id(), List.of(self), storage, 1000));
            awaitLeading(replica, Duration.ofSeconds(10));
            return replica;
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

    public static int freePort() {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
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
