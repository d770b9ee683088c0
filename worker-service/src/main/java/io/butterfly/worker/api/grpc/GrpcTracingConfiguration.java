package io.butterfly.worker.api.grpc;

import io.butterfly.common.grpc.GrpcTracing;
import io.butterfly.common.grpc.PeerDialer;
import io.butterfly.worker.gateway.PeerChannels;
import io.micrometer.observation.ObservationPredicate;
import io.micrometer.observation.ObservationRegistry;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Which gRPC calls are traced (docs/observability.md): every call but the long-lived streams, whose steps carry
 * their requests' trace context themselves; and the channels to the peers (mutual TLS with this node's
 * certificate) carry the caller's trace context.
 */
@Configuration(proxyBeanMethods = false)
public class GrpcTracingConfiguration {

    @Bean
    ObservationPredicate skipLongLivedGrpcStreams() {
        return GrpcTracing.SKIP_LONG_LIVED_STREAMS;
    }

    @Bean
    PeerChannels.Opener peerChannelOpener(ObservationRegistry registry, PeerDialer dialer) {
        var interceptors = GrpcTracing.clientInterceptors(registry);
        return (host, port) -> dialer.open(host, port, interceptors);
    }
}
