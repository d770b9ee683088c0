package io.butterfly.common.identity;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

class CallerTest {

    private static final Caller WORKER_0 = Caller.certified(new PeerIdentity(NodeRole.WORKER, "worker-0"));
    private static final Caller WORKER_1 = Caller.certified(new PeerIdentity(NodeRole.WORKER, "worker-1"));
    private static final Caller COORDINATOR = Caller.certified(new PeerIdentity(NodeRole.COORDINATOR, "coordinator-0"));
    private static final Caller REGISTRY = Caller.certified(new PeerIdentity(NodeRole.REGISTRY, "worker-0"));

    @Test
    void aMessageForANodeComesFromThatNodeOrACoordinator() {
        allowed(() -> WORKER_0.requireSpeaksFor(NodeRole.WORKER, "worker-0", "heartbeat"));
        allowed(() -> COORDINATOR.requireSpeaksFor(NodeRole.WORKER, "worker-0", "heartbeat"));
        ButterflyException refused = refused(() -> WORKER_1.requireSpeaksFor(NodeRole.WORKER, "worker-0", "heartbeat"));
        assertThat(refused.getMessage()).isEqualTo("heartbeat for worker 'worker-0' refused: the caller's certificate"
                + " names worker 'worker-1'");
        assertThat(refused.context()).containsEntry("check", "peer_identity").containsEntry("node_id", "worker-0")
                .containsEntry("peer", "worker-1.worker.butterfly.internal");
        // the same node id under another role is another node
        refused(() -> REGISTRY.requireSpeaksFor(NodeRole.WORKER, "worker-0", "heartbeat"));
        refused(() -> Caller.UNIDENTIFIED.requireSpeaksFor(NodeRole.WORKER, "worker-0", "heartbeat"));
    }

    @Test
    void rolesNodesAndStages() {
        allowed(() -> COORDINATOR.requireRole("assignment", NodeRole.COORDINATOR));
        refused(() -> WORKER_0.requireRole("assignment", NodeRole.COORDINATOR));
        allowed(() -> WORKER_0.requireRole("release", NodeRole.COORDINATOR, NodeRole.WORKER));
        refused(() -> Caller.UNIDENTIFIED.requireRole("release", NodeRole.COORDINATOR, NodeRole.WORKER));

        allowed(() -> REGISTRY.requireIs(null, "worker-0", "heartbeat"));
        allowed(() -> WORKER_0.requireIs(NodeRole.WORKER, "worker-0", "join"));
        refused(() -> REGISTRY.requireIs(NodeRole.WORKER, "worker-0", "join"));
        refused(() -> WORKER_1.requireIs(null, "worker-0", "heartbeat"));
        refused(() -> COORDINATOR.requireIs(null, "worker-0", "heartbeat"));

        allowed(() -> WORKER_1.requireWorkerAmong(List.of("worker-0", "worker-1"), "step outcome"));
        refused(() -> WORKER_1.requireWorkerAmong(List.of("worker-0"), "step outcome"));
        refused(() -> COORDINATOR.requireWorkerAmong(List.of("coordinator-0"), "step outcome"));
    }

    @Test
    void withTlsOffNothingIsChecked() {
        allowed(() -> Caller.PLAINTEXT.requireSpeaksFor(NodeRole.WORKER, "worker-0", "heartbeat"));
        allowed(() -> Caller.PLAINTEXT.requireRole("assignment", NodeRole.COORDINATOR));
        allowed(() -> Caller.PLAINTEXT.requireIs(NodeRole.WORKER, "worker-0", "join"));
        allowed(() -> Caller.PLAINTEXT.requireWorkerAmong(List.of(), "step outcome"));
        assertThat(Caller.PLAINTEXT.isCertifiedAs(NodeRole.WORKER, "worker-0")).isFalse();
        assertThat(WORKER_0.isCertifiedAs(NodeRole.WORKER, "worker-0")).isTrue();
    }

    private static void allowed(Executable check) {
        assertThatCode(check::execute).doesNotThrowAnyException();
    }

    private static ButterflyException refused(Executable check) {
        ButterflyException e = assertThrows(ButterflyException.class, check);
        assertThat(e.code()).isEqualTo(ErrorCode.INVALID_SIGNATURE);
        assertThat(e.kind()).isEqualTo(ErrorKind.PERMISSION_DENIED);
        return e;
    }
}
