package io.butterfly.coordinator.raft;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Raft settings a replica starts with. */
class ControlReplicaPropertiesTest {

    @TempDir
    Path storage;

    /**
     * A replica whose JVM was paused for over a minute (a loaded machine, a stopped process) keeps serving: Ratis' own
     * default closes it for good after 60 s, and the coordinator then never led again.
     */
    @Test
    void aLongPauseDoesNotCloseTheReplica() {
        ReplicaSettings.Peer self = new ReplicaSettings.Peer("coordinator-0", "127.0.0.1", 9070);
        var p = ControlReplica.properties(TestReplicas.settings(self.id(), List.of(self), storage, 1000));
        assertThat(RaftServerConfigKeys.closeThreshold(p).toLong(TimeUnit.HOURS)).isGreaterThanOrEqualTo(24);
    }
}
