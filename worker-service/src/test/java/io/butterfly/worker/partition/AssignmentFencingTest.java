package io.butterfly.worker.partition;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.proto.common.v1.LayerRange;
import io.butterfly.proto.worker.v1.AssignPartitionRequest;
import io.butterfly.proto.worker.v1.Endpoint;
import io.butterfly.worker.cluster.CoordinatorLink;
import io.butterfly.worker.cluster.PeerChannels;
import io.butterfly.worker.config.RegistryClientProperties;
import io.butterfly.worker.config.WorkerProperties;
import org.springframework.util.unit.DataSize;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The coordinator's Raft term fences assignments: a deposed leader's (older term) is refused. */
class AssignmentFencingTest {

    @TempDir
    Path dataDir;

    @Test
    void assignmentFromAnOlderTermIsRefusedWithStaleTerm() {
        WorkerProperties props = new WorkerProperties("w1", "127.0.0.1", dataDir, "cpu", 1, "butterfly", "127.0.0.1",
                1, 100, "127.0.0.1", 0, List.of(), 5000, DataSize.ofBytes(0), java.time.Duration.ofMinutes(10), DataSize.ofBytes(0));
        PeerChannels channels = new PeerChannels();
        PartitionManager manager = new PartitionManager(props, new RegistryClientProperties(5, Duration.ofSeconds(5), 2, false, null), channels, new CoordinatorLink(props, channels));

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
        WorkerProperties props = new WorkerProperties("w1", "127.0.0.1", dataDir, "cpu", 1, "butterfly", "127.0.0.1",
                1, 100, "127.0.0.1", 0, List.of(), 5000, DataSize.ofBytes(0), java.time.Duration.ofMinutes(10), DataSize.ofBytes(0));
        PeerChannels channels = new PeerChannels();
        CoordinatorLink link = new CoordinatorLink(props, channels);
        PartitionManager manager = new PartitionManager(props, new RegistryClientProperties(5, Duration.ofSeconds(5), 2, false, null), channels, link);

        manager.assign(request(3, 1));
        assertEquals("coordinator-0", link.coordinator().getNodeId());
        // Same epoch and layers, new term, from the replica that now leads.
        AssignPartitionRequest takeover = request(4, 1).toBuilder()
                .setCoordinator(Endpoint.newBuilder().setNodeId("coordinator-1").setHost("127.0.0.1").setGrpcPort(2))
                .build();
        manager.assign(takeover);
        assertEquals("coordinator-1", link.coordinator().getNodeId());
        ButterflyException refused = assertThrows(ButterflyException.class, () -> manager.assign(request(3, 1)));
        assertEquals(ErrorCode.STALE_TERM, refused.code());
        assertEquals("coordinator-1", link.coordinator().getNodeId());
    }

    private static AssignPartitionRequest request(long term, long epoch) {
        // The registry endpoint is closed: loading fails in the background, which is irrelevant to fencing.
        return AssignPartitionRequest.newBuilder().setModelId("m").setTerm(term).setEpoch(epoch)
                .setLayers(LayerRange.newBuilder().setStart(0).setEnd(2))
                .setRegistry(Endpoint.newBuilder().setNodeId("registry").setHost("127.0.0.1").setGrpcPort(1))
                .setCoordinator(Endpoint.newBuilder().setNodeId("coordinator-0").setHost("127.0.0.1").setGrpcPort(1))
                .build();
    }
}
