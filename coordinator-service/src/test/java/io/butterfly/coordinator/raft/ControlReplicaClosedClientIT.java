package io.butterfly.coordinator.raft;

import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.control.ControlLogUnavailableException;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.ratis.client.RaftClient;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A replica whose Raft client Ratis has closed (as its ordered async client closes for good after a terminal failure)
 * gets a new one: the command that met the closed client fails as unavailable, the next one commits. Before, every
 * later command failed, and a leader with such a client could not commit its own no-op.
 */
class ControlReplicaClosedClientIT {

    private ControlReplica replica;

    @AfterEach
    void stop() {
        if (replica != null) {
            replica.close();
        }
    }

    @Test
    void aClientClosedUnderTheReplicaIsReplaced(@TempDir Path dir) throws Exception {
        replica = TestReplicas.single(dir);
        long before = submitWithin(new ClusterCommand.NoOp("coordinator-0", 1, 1), Duration.ofMinutes(1));

        RaftClient closed = replica.client();
        closed.close();
        assertThrows(ControlLogUnavailableException.class,
                () -> replica.submit(new ClusterCommand.NoOp("coordinator-0", 1, 2)));
        assertNotSame(closed, replica.client());

        RaftClient replacement = replica.client();
        // (a loaded machine may take longer than the 5 s request timeout; a closed client never commits at all)
        long after = submitWithin(new ClusterCommand.NoOp("coordinator-0", 1, 3), Duration.ofMinutes(1));
        assertTrue(after > before, "the next command commits");
        assertSame(replacement, replica.client(), "a working client stays");
    }

    /** The applied index once {@code command} has committed, asked again while the log answers unavailable. */
    private long submitWithin(ClusterCommand command, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                return replica.submit(command).lastAppliedIndex();
            } catch (ControlLogUnavailableException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
            }
        }
    }

    @Test
    void aClosedReplicaMakesNoNewClient(@TempDir Path dir) {
        replica = TestReplicas.single(dir);
        RaftClient last = replica.client();
        replica.close();
        assertThrows(ControlLogUnavailableException.class,
                () -> replica.submit(new ClusterCommand.NoOp("coordinator-0", 1, 1)));
        assertSame(last, replica.client());
        replica = null;
    }
}
