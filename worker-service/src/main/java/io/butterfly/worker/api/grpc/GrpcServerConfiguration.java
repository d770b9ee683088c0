package io.butterfly.worker.api.grpc;

import io.butterfly.common.grpc.TransportThreadMethods;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/**
 * A step read off a Steps stream is checked and queued for the engine thread on the transport thread that read it
 * (the handler only checks the caller and converts the message): one thread wake-up less per stage and token than
 * passing it through the server's executor first. Each stage of a pipeline pays its hops per token, so with three
 * workers this is three wake-ups a token. A head shard's Heads request is handled the same way (queued for the
 * engine thread, answered from there): a head-parallel stage asks each other shard twice a layer.
 */
@Configuration(proxyBeanMethods = false)
public class GrpcServerConfiguration {

    @Bean
    @SuppressWarnings("rawtypes")
    ServerBuilderCustomizer stepsOnTransportThread() {
        return TransportThreadMethods.customizer(WorkerServiceGrpc.getStepsMethod(), WorkerServiceGrpc.getHeadsMethod());
    }
}
