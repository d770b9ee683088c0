package io.butterfly.worker.partition;

import io.butterfly.common.tls.ClusterTls;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.worker.cluster.Endpoint;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.gateway.CoordinatorGateway;
import io.butterfly.worker.gateway.PeerChannels;
import io.butterfly.worker.gateway.RegistryGateway;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The coordinator's Raft term fences assignments: a deposed leader's (older term) is refused. */
class AssignmentFencingTest {

    @TempDir
    Path dataDir;

    private final PeerChannels channels = new PeerChannels(ClusterTls.PLAINTEXT);

    private PartitionManager manager(CoordinatorGateway coordinators) {
        return new PartitionManager(new PartitionSettings("w1", dataDir, List.of(), new ExecutorOptions("cpu", 1)),
                new RegistryGateway(channels, 5, Duration.ofSeconds(5), 2, false, null), coordinators);
    }

    @Test
    void assignmentFromAnOlderTermIsRefusedWithStaleTerm() {
        PartitionManager manager = manager(new CoordinatorGateway("w1", 100, null, channels));

        assertDoesNotThrow(() -> manager.assign(request(5, 1)));

        ButterflyException refused = assertThrows(ButterflyException.class, () -> manager.assign(request(4, 2)));
        assertEquals(ErrorCode.STALE_TERM, refused.code());
        assertEquals(ErrorKind.FAILED_PRECONDITION, refused.kind());

        // The newly elected leader (higher term) is obeyed, and so is the current one again.
        assertDoesNotThrow(() -> manager.assign(request(6, 2)));
        assertDoesNotThrow(() -> manager.assign(request(6, 3)));
        assertThrows(ButterflyException.class, () -> manager.assign(request(5, 4)));
    }

    @Test
    void aNewLeaderReAnnouncingTheAssignmentTakesOverReportsAndFencesTheOldOne() {
        CoordinatorGateway coordinators = new CoordinatorGateway("w1", 100, null, channels);
        PartitionManager manager = manager(coordinators);

        manager.assign(request(3, 1));
        assertEquals("coordinator-0", coordinators.coordinator().nodeId());
        // Same epoch and layers, new term, from the replica that now leads.
        Assignment takeover = request(4, 1, new Endpoint("coordinator-1", "127.0.0.1", 2));
        manager.assign(takeover);
        assertEquals("coordinator-1", coordinators.coordinator().nodeId());
        ButterflyException refused = assertThrows(ButterflyException.class, () -> manager.assign(request(3, 1)));
        assertEquals(ErrorCode.STALE_TERM, refused.code());
        assertEquals("coordinator-1", coordinators.coordinator().nodeId());
    }

    private static Assignment request(long term, long epoch) {
        return request(term, epoch, new Endpoint("coordinator-0", "127.0.0.1", 1));
    }

    private static Assignment request(long term, long epoch, Endpoint coordinator) {
        // The registry endpoint is closed: loading fails in the background, which is irrelevant to fencing.
        return new Assignment("m", 0, 2, false, false, epoch, term, new Endpoint("registry", "127.0.0.1", 1), coordinator,
                List.of());
    }
}
