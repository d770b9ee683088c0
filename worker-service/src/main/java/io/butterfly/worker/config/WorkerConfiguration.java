package io.butterfly.worker.config;

import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.proto.coordinator.v1.LoadPhase;
import io.butterfly.worker.partition.PartitionManager;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration
public class WorkerConfiguration {

    @Bean
    ButterflyGrpcExceptionHandler grpcExceptionHandler() {
        return new ButterflyGrpcExceptionHandler();
    }

    /** Readiness of a worker = its partition is loaded and verified (DESIGN.md §1). */
    @Bean
    HealthIndicator partitionHealthIndicator(PartitionManager partitions) {
        return () -> {
            var s = partitions.status();
            Health.Builder h = s.phase() == LoadPhase.READY ? Health.up() : Health.outOfService();
            h.withDetail("phase", s.phase().name());
            if (s.error() != null) {
                h.withDetail("error", s.error());
            }
            return h.build();
        };
    }
}
