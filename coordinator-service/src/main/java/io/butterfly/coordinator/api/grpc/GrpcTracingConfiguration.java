package io.butterfly.coordinator.api.grpc;

import io.butterfly.common.grpc.GrpcTracing;
import io.butterfly.common.grpc.PeerDialer;
import io.butterfly.coordinator.gateway.ServiceChannels;
import io.butterfly.coordinator.gateway.worker.WorkerGateway;
import io.micrometer.observation.ObservationPredicate;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Which gRPC calls are traced (docs/observability.md): every call but the long-lived streams, whose steps carry
 * their requests' trace context themselves; and the channels to the workers (mutual TLS with this node's
 * certificate) carry the caller's trace context, those to discovery and the registry none.
 */
@Configuration(proxyBeanMethods = false)
public class GrpcTracingConfiguration {

    @Bean
    ObservationPredicate skipLongLivedGrpcStreams() {
        return GrpcTracing.SKIP_LONG_LIVED_STREAMS;
    }

    @Bean
    WorkerGateway.ChannelOpener workerChannels(ObservationRegistry registry, PeerDialer dialer) {
        var interceptors = GrpcTracing.clientInterceptors(registry);
        return (host, port) -> dialer.open(host, port, interceptors);
    }

    @Bean
    ServiceChannels serviceChannels(PeerDialer dialer) {
        return dialer::open;
    }
}
