package io.butterfly.discovery.config;

import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.discovery.membership.MembershipRegistry;
import java.time.Clock;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

@Configuration
public class DiscoveryConfiguration {

    @Bean
    MembershipRegistry membershipRegistry(DiscoveryProperties props) {
        return new MembershipRegistry(props.clusterName(), props.protocolVersion(), props.maxMembers());
    }

    @Bean
    Clock clock() {
        return Clock.systemUTC();
    }

    @Bean
    ButterflyGrpcExceptionHandler grpcExceptionHandler() {
        return new ButterflyGrpcExceptionHandler();
    }
}
