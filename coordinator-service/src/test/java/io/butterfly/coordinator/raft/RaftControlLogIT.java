package io.butterfly.coordinator.raft;

import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.ControlLogContract;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;

/** The control log on a real one-replica Raft group (on a socket) keeps the control log's contract. */
class RaftControlLogIT extends ControlLogContract {

    private ControlReplica replica;
    private ControlLog control;

    @BeforeEach
    void start(@TempDir Path dir) {
        replica = TestReplicas.single(dir);
        control = new RaftControlLog(replica);
    }

    @Override
    protected ControlLog control() {
        return control;
    }

    @AfterEach
    void stop() {
        replica.close();
    }
}
