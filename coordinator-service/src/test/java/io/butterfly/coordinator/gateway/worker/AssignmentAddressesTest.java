package io.butterfly.coordinator.gateway.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.proto.worker.v1.Endpoint;
import java.util.List;
import org.junit.jupiter.api.Test;

class AssignmentAddressesTest {

    private static final Endpoint SELF = Endpoint.newBuilder().setNodeId("coordinator-1").setHost("10.0.0.2")
            .setGrpcPort(9083).build();

    @Test
    void withoutConfiguredReplicasOnlyThisOneIsListed() {
        assertThat(AssignmentAddresses.replicas(SELF, List.of())).containsExactly(SELF);
    }

    @Test
    void listsThisReplicaFirstThenTheOthersOnce() {
        List<Endpoint> all = AssignmentAddresses.replicas(SELF, List.of(
                "coordinator-0=10.0.0.1:9080", "coordinator-1=10.0.0.2:9083", " coordinator-2 = 10.0.0.3:9084"));
        assertThat(all).extracting(Endpoint::getNodeId).containsExactly("coordinator-1", "coordinator-0", "coordinator-2");
        assertThat(all.get(2).getHost()).isEqualTo("10.0.0.3");
        assertThat(all.get(2).getGrpcPort()).isEqualTo(9084);
    }

    @Test
    void aMalformedEntryNamesTheProperty() {
        assertThatThrownBy(() -> AssignmentAddresses.replicas(SELF, List.of("coordinator-0:9080")))
                .hasMessageContaining("replica-grpc-endpoints").hasMessageContaining("id=host:port");
        assertThatThrownBy(() -> AssignmentAddresses.replicas(SELF, List.of("coordinator-0=h:x")))
                .hasMessageContaining("numeric port");
    }
}
