package io.butterfly.worker.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.proto.worker.v1.Endpoint;
import org.junit.jupiter.api.Test;

class EndpointsTest {

    @Test
    void acceptsHostNamesAndAddressesWithAPortInRange() {
        for (String host : new String[]{"127.0.0.1", "butterfly-worker-0.butterfly-worker-pods", "::1"}) {
            Endpoint e = endpoint(host, 9090);
            assertThat(Endpoints.requireValid(e, "downstream[0]")).isSameAs(e);
        }
        Endpoints.requireValid(endpoint("h", 1), "x");
        Endpoints.requireValid(endpoint("h", 65535), "x");
    }

    @Test
    void refusesBlankHostsHostsWithWhitespaceAndPortsOutOfRangeNamingTheField() {
        assertThatThrownBy(() -> Endpoints.requireValid(endpoint("", 9090), "reply_to"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reply_to.host");
        assertThatThrownBy(() -> Endpoints.requireValid(endpoint("a b", 9090), "downstream[1]"))
                .hasMessageContaining("downstream[1].host").hasMessageContaining("'a b'");
        assertThatThrownBy(() -> Endpoints.requireValid(endpoint("h", 0), "registry"))
                .hasMessageContaining("registry.grpc_port").hasMessageContaining("0");
        assertThatThrownBy(() -> Endpoints.requireValid(endpoint("h", 65536), "coordinator"))
                .hasMessageContaining("coordinator.grpc_port");
        assertThatThrownBy(() -> Endpoints.requireValid(Endpoint.getDefaultInstance(), "registry"))
                .hasMessageContaining("registry.host");
    }

    private static Endpoint endpoint(String host, int port) {
        return Endpoint.newBuilder().setHost(host).setGrpcPort(port).build();
    }
}
