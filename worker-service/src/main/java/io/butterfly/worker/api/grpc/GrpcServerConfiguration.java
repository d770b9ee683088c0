package io.butterfly.worker.api.grpc;

import io.butterfly.common.grpc.TransportThreadMethods;
import io.butterfly.proto.worker.v1.WorkerServiceGrpc;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/** How the gRPC server serves this API: the one method answered on the transport thread. */
@Configuration(proxyBeanMethods = false)
public class GrpcServerConfiguration {

    /** A step is queued for the engine thread by the transport thread that read it ({@code PipelineStage#enqueue}). */
    @Bean
    @SuppressWarnings("rawtypes")
    ServerBuilderCustomizer stepsOnTransportThread() {
        return TransportThreadMethods.customizer(WorkerServiceGrpc.getStepsMethod());
    }
}
