package io.butterfly.coordinator.config;

import io.butterfly.coordinator.gateway.ServiceChannels;
import io.butterfly.coordinator.gateway.discovery.DiscoveryGateway;
import io.butterfly.coordinator.gateway.registry.RegistryGateway;
import io.butterfly.coordinator.gateway.worker.WorkerGateway;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The gateways to the other services, each the only code that speaks its service's protocol; every channel they open
 * comes from the node's {@code PeerDialer} (mutual TLS with this node's certificate; plaintext only with
 * butterfly.tls.enabled=false).
 */
@Configuration
public class GatewayConfiguration {

    @Bean(destroyMethod = "close")
    RegistryGateway registryGateway(CoordinatorProperties props, ServiceChannels channels) {
        return new RegistryGateway(channels.open(props.registryHost(), props.registryPort()));
    }

    @Bean(destroyMethod = "close")
    WorkerGateway workerGateway(CoordinatorProperties props, ControlRaftProperties raft,
                                @Value("${spring.grpc.server.port}") int grpcPort, WorkerGateway.ChannelOpener channels) {
        return new WorkerGateway(new WorkerGateway.Settings(props.nodeId(), props.advertiseHost(), grpcPort,
                props.registryHost(), props.registryPort(), raft.replicaGrpcEndpoints(), props.stepTimeoutSeconds()),
                channels);
    }

    /** Closing it leaves discovery. */
    @Bean(destroyMethod = "close")
    DiscoveryGateway discoveryGateway(CoordinatorProperties props, ServiceChannels channels,
                                      @Value("${spring.grpc.server.port}") int grpcPort, @Value("${server.port}") int httpPort) {
        return new DiscoveryGateway(channels.open(props.discoveryHost(), props.discoveryPort()), new DiscoveryGateway.Self(
                props.nodeId(), props.clusterName(), props.advertiseHost(), grpcPort, httpPort, props.dataDir()));
    }
}
