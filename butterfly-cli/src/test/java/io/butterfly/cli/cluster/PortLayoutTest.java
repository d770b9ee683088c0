package io.butterfly.cli.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class PortLayoutTest {

    @Test
    void theOffsetShiftsEveryPort() {
        PortLayout p = PortLayout.withOffset(1000);
        assertThat(List.of(p.coordinatorHttp(0), p.coordinatorGrpc(0), p.registryHttp(), p.registryGrpc(), p.discoveryHttp(),
                p.discoveryGrpc(), p.hazelcast(), p.workerHttp(0), p.workerGrpc(2)))
                .containsExactly(9080, 10080, 9081, 10081, 9082, 10082, 6701, 9090, 10092);
        assertThat(p.coordinatorUrl()).isEqualTo("http://127.0.0.1:9080");
    }

    @Test
    void coordinatorReplicasTakeTheirOwnPortsAndRaftPortsClearOfTheWorkers() {
        PortLayout p = PortLayout.withOffset(0);
        assertThat(List.of(p.coordinatorHttp(1), p.coordinatorGrpc(1), p.coordinatorHttp(2), p.coordinatorGrpc(2)))
                .containsExactly(8083, 9083, 8084, 9084);
        assertThat(List.of(p.raft(0), p.raft(1), p.raft(2))).containsExactly(9070, 9071, 9072);
    }

    @Test
    void theCoordinatorsHttpPortCanMoveAlone() {
        PortLayout p = new PortLayout(0, 18080);
        assertThat(p.coordinatorHttp(0)).isEqualTo(18080);
        assertThat(p.coordinatorHttp(1)).isEqualTo(8083);
        assertThat(p.coordinatorGrpc(0)).isEqualTo(9080);
    }

    @Test
    void everyPortOfAClusterIsListedWithItsOwner() {
        List<PortLayout.Use> ports = PortLayout.withOffset(0).ports(2, 3);
        assertThat(ports).hasSize(5 + 2 * 2 + 3 * 3).doesNotHaveDuplicates();
        assertThat(ports).contains(new PortLayout.Use(5701, "discovery's Hazelcast"), new PortLayout.Use(9091, "worker-1"),
                new PortLayout.Use(9072, "coordinator-2's Raft"), new PortLayout.Use(8084, "coordinator-2"));
        assertThat(ports.stream().map(PortLayout.Use::port).distinct()).hasSize(ports.size());
    }
}
