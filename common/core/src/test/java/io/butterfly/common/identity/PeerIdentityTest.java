package io.butterfly.common.identity;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Optional;
import org.junit.jupiter.api.Test;

class PeerIdentityTest {

    @Test
    void anIdentityIsOneDnsNameUnderTheClusterSuffix() {
        PeerIdentity worker = new PeerIdentity(NodeRole.WORKER, "worker-0");
        assertThat(worker.dnsName()).isEqualTo("worker-0.worker.butterfly.internal");
        assertThat(PeerIdentity.parse(worker.dnsName())).contains(worker);
        assertThat(PeerIdentity.parse("BUTTERFLY-COORDINATOR-2.Coordinator.Butterfly.Internal"))
                .contains(new PeerIdentity(NodeRole.COORDINATOR, "butterfly-coordinator-2"));
    }

    @Test
    void otherNamesCarryNoIdentity() {
        for (String name : new String[] {"localhost", "worker-0.worker.butterfly.example", "worker-0.admin.butterfly.internal",
                "a.worker-0.worker.butterfly.internal", ".worker.butterfly.internal", "-w.worker.butterfly.internal",
                "worker.butterfly.internal", "butterfly-worker-0.butterfly-worker-pods.ns.svc.cluster.local"}) {
            assertThat(PeerIdentity.parse(name)).as(name).isEqualTo(Optional.empty());
        }
    }

    @Test
    void aNodeIdMustBeADnsLabel() {
        assertThat(PeerIdentity.isValidNodeId("worker-12")).isTrue();
        assertThat(PeerIdentity.isValidNodeId("x".repeat(63))).isTrue();
        for (String id : new String[] {"", "Worker-0", "worker_0", "worker.0", "-worker", "worker-", "x".repeat(64)}) {
            assertThatThrownBy(() -> new PeerIdentity(NodeRole.WORKER, id)).as(id)
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("DNS label");
        }
    }
}
