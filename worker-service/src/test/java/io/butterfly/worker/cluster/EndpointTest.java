package io.butterfly.worker.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class EndpointTest {

    @Test
    void acceptsHostNamesAndAddressesWithAPortInRange() {
        for (String host : new String[]{"127.0.0.1", "butterfly-worker-0.butterfly-worker-pods", "::1"}) {
            Endpoint e = endpoint(host, 9090);
            assertThat(e.requireValid("downstream[0]")).isSameAs(e);
        }
        endpoint("h", 1).requireValid("x");
        endpoint("h", 65535).requireValid("x");
    }

    @Test
    void refusesBlankHostsHostsWithWhitespaceAndPortsOutOfRangeNamingTheField() {
        assertThatThrownBy(() -> endpoint("", 9090).requireValid("reply_to"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("reply_to.host");
        assertThatThrownBy(() -> endpoint("a b", 9090).requireValid("downstream[1]"))
                .hasMessageContaining("downstream[1].host").hasMessageContaining("'a b'");
        assertThatThrownBy(() -> endpoint("h", 0).requireValid("registry"))
                .hasMessageContaining("registry.grpc_port").hasMessageContaining("0");
        assertThatThrownBy(() -> endpoint("h", 65536).requireValid("coordinator"))
                .hasMessageContaining("coordinator.grpc_port");
        // what an absent endpoint field of a message maps to
        assertThatThrownBy(() -> new Endpoint("", "", 0).requireValid("registry"))
                .hasMessageContaining("registry.host");
    }

    private static Endpoint endpoint(String host, int port) {
        return new Endpoint("", host, port);
    }
}
