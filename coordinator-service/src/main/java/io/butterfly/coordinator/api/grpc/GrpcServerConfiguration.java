package io.butterfly.coordinator.api.grpc;

import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.common.grpc.TransportThreadMethods;
import io.butterfly.proto.coordinator.v1.CoordinatorServiceGrpc;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.server.ServerBuilderCustomizer;

/** How the gRPC server serves this API: its error mapping, and the one method answered on the transport thread. */
@Configuration
public class GrpcServerConfiguration {

    /** A step outcome completes its waiting request on the thread that read it off the wire. */
    @Bean
    @SuppressWarnings("rawtypes")
    ServerBuilderCustomizer stepOutcomesOnTransportThread() {
        return TransportThreadMethods.customizer(CoordinatorServiceGrpc.getStepOutcomesMethod());
    }

    @Bean
    ButterflyGrpcExceptionHandler grpcExceptionHandler() {
        return new ButterflyGrpcExceptionHandler();
    }
}
