package io.butterfly.coordinator.config;

import io.butterfly.coordinator.gateway.registry.RegistryGateway;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The gateways to the other services, each the only code that speaks its service's protocol. */
@Configuration
public class GatewayConfiguration {

    @Bean(destroyMethod = "close")
    RegistryGateway registryGateway(CoordinatorProperties props) {
        return RegistryGateway.connect(props.registryHost(), props.registryPort());
    }
}
