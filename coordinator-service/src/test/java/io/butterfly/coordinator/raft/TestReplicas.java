package io.butterfly.coordinator.raft;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.ratis.util.ExitUtils;

/** Real Ratis replicas on loopback for tests (temporary storage, free ports). */
public final class TestReplicas {

    static {
        // Ratis calls System.exit when its gRPC server cannot bind its port, which would end the whole surefire
        // fork; in tests it throws instead, so a replica whose port was taken can be started again (portTaken).
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
                snapshotThreshold, Duration.ofSeconds(5), null, retention);
    }

    /** A started one-replica group that already leads (as on the embedded default). */
    public static ControlReplica single(Path storage) {
        // The port is only known free until freePort() closes it (Ratis needs the number up front: its peers and
        // clients are addressed by it); if another process binds it first, start again on another port.
        for (int attempt = 1; ; attempt++) {
            ReplicaSettings.Peer self = new ReplicaSettings.Peer("coordinator-0", "127.0.0.1", freePort());
            ControlReplica replica;
            try {
                replica = ControlReplica.start(settings(self.id(), List.of(self), storage, 1000));
            } catch (IOException | RuntimeException e) {
                if (attempt < 3 && portTaken(e)) {
                    continue;
                }
                throw e instanceof IOException io ? new UncheckedIOException(io) : (RuntimeException) e;
            }
            awaitLeading(replica, Duration.ofSeconds(10));
            return replica;
        }
    }

    /** Whether a replica failed to start because its port was taken (it could not bind it). */
    public static boolean portTaken(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof BindException || String.valueOf(t.getMessage()).contains("Address already in use")) {
                return true;
            }
        }
        return false;
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
        return freePorts(1).get(0);
    }

    /**
     * {@code n} distinct ports that were free a moment ago: all are held until the last is picked, since a port
     * opened and closed again may be handed out again by the very next pick.
     */
    public static List<Integer> freePorts(int n) {
        List<ServerSocket> held = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                held.add(new ServerSocket(0));
            }
            return held.stream().map(ServerSocket::getLocalPort).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            for (ServerSocket s : held) {
                try {
                    s.close();
                } catch (IOException ignored) {
                    // closing an unused listening socket; nothing to do
                }
            }
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
