package io.butterfly.discovery.config;

import com.hazelcast.core.HazelcastInstance;
import io.butterfly.discovery.api.grpc.NodeCapabilitiesJson;
import io.butterfly.discovery.consul.ConsulMembershipStore;
import io.butterfly.discovery.hazelcast.HazelcastMembershipStore;
import io.butterfly.discovery.membership.CapabilitiesCodec;
import io.butterfly.discovery.membership.MembershipRegistry;
import io.butterfly.discovery.membership.MembershipStore;
import io.butterfly.discovery.membership.SeedProbe;
import io.butterfly.discovery.membership.StaticMembershipStore;
import io.butterfly.discovery.membership.StaticSeed;
import java.time.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.cloud.consul.ConsulClient;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Picks the membership backend named by {@code butterfly.discovery.backend}. */
@Configuration(proxyBeanMethods = false)
public class MembershipConfiguration {

    private static final Logger log = LoggerFactory.getLogger(MembershipConfiguration.class);

    @Bean
    CapabilitiesCodec capabilitiesCodec() {
        return new NodeCapabilitiesJson();
    }

    @Bean
    MembershipStore membershipStore(DiscoveryProperties props, CapabilitiesCodec codec, Clock clock,
                                    ObjectProvider<HazelcastInstance> hazelcast, ObjectProvider<ConsulClient> consul) {
        MembershipStore store = switch (props.backend()) {
            case EMBEDDED -> new HazelcastMembershipStore(hazelcast.getObject(), props.memberTtl(), codec);
            case STATIC -> new StaticMembershipStore(new MembershipRegistry(clock, props.memberTtl()),
                    props.staticMembers().stream().map(StaticSeed::parse).toList(),
                    SeedProbe.tcpConnect(props.staticProbeTimeout()), props.staticProbeInterval(), clock);
            case CONSUL -> new ConsulMembershipStore(consul.getIfAvailable(() -> {
                throw new IllegalStateException("butterfly.discovery.backend=consul needs Spring Cloud Consul: "
                        + "run with the consul profile (spring.cloud.consul.enabled=true)");
            }), props.clusterName(), new MembershipRegistry(clock, props.memberTtl()), codec);
        };
        log.info("membership backend: {}", props.backend().name().toLowerCase(java.util.Locale.ROOT));
        return store;
    }
}
