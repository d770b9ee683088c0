package io.butterfly.discovery.config;

import io.butterfly.common.crypto.NodeIdentity;
import io.butterfly.common.grpc.ButterflyGrpcExceptionHandler;
import io.butterfly.common.grpc.PeerDialer;
import io.butterfly.discovery.admission.AdmissionChain;
import io.butterfly.discovery.admission.AdmissionPolicy;
import io.butterfly.discovery.admission.JournaledSeenMessageIds;
import io.butterfly.discovery.admission.SeenMessageIds;
import io.butterfly.discovery.api.grpc.DiscoveryGrpcService;
import io.butterfly.discovery.api.grpc.DiscoveryWarmUp;
import io.butterfly.discovery.api.grpc.PeerAddressInterceptor;
import io.butterfly.discovery.hazelcast.HazelcastSeenMessageIds;
import io.butterfly.discovery.membership.MembershipStore;
import io.butterfly.discovery.membership.ProtocolVersion;
import java.io.IOException;
import java.time.Clock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.grpc.server.GlobalServerInterceptor;

@Configuration
public class DiscoveryConfiguration {

    private static final Logger log = LoggerFactory.getLogger(DiscoveryConfiguration.class);

    /** The wall clock; a test harness may register its own first (a skewed one: clock-skew faults). */
    @Bean
    @ConditionalOnMissingBean(Clock.class)
    Clock clock() {
        return Clock.systemUTC();
    }

    @Bean
    NodeIdentity discoveryIdentity(DiscoveryProperties props) {
        NodeIdentity identity = NodeIdentity.loadOrCreate(props.dataDir());
        log.info("discovery '{}' identity key {}", props.nodeId(), identity.publicKeyHex());
        return identity;
    }

    /**
     * The accepted message ids: shared with the other replicas where the backend shares state (embedded), and
     * journaled in the data directory so that a restarted replica still refuses a replay.
     */
    @Bean(destroyMethod = "close")
    JournaledSeenMessageIds seenMessageIds(DiscoveryProperties props, Clock clock,
                                           ObjectProvider<HazelcastSeenMessageIds> sharedIds) throws IOException {
        HazelcastSeenMessageIds shared = sharedIds.getIfAvailable();
        SeenMessageIds table = shared != null ? shared : SeenMessageIds.inMemory();
        return JournaledSeenMessageIds.open(props.dataDir().resolve("seen-message-ids"), table, clock.millis());
    }

    @Bean
    AdmissionChain admissionChain(DiscoveryProperties props, MembershipStore registry, Clock clock,
                                  JournaledSeenMessageIds seenIds) {
        return new AdmissionChain(policy(props), registry, clock, seenIds);
    }

    public static AdmissionPolicy policy(DiscoveryProperties props) {
        DiscoveryProperties.Admission a = props.admission();
        if (a.trustOnFirstUse()) {
            log.warn("trust-on-first-use is on: any node id not in the trust store may join (embedded default; off in prod)");
        }
        return new AdmissionPolicy(props.nodeId(), props.clusterName(), ProtocolVersion.parse(props.protocolVersion()),
                props.features(), props.requiredFeatures(), props.maxMembers(), a.trustedKeys(), a.trustOnFirstUse(),
                a.replayWindow(), a.joinBurst(), a.joinsPerSecond());
    }

    @Bean
    DiscoveryGrpcService discoveryGrpcService(AdmissionChain admission, MembershipStore registry,
                                              NodeIdentity discoveryIdentity, DiscoveryProperties props) {
        return new DiscoveryGrpcService(admission, registry, discoveryIdentity, props.nodeId(), props.clusterName());
    }

    /** Answers once of its own when the gRPC server starts, so the first joining node does not pay for the cold path. */
    @Bean
    DiscoveryWarmUp discoveryWarmUp(DiscoveryGrpcService service, DiscoveryProperties props, PeerDialer dialer) {
        return new DiscoveryWarmUp(service, props.clusterName(), dialer);
    }

    @Bean
    @GlobalServerInterceptor
    PeerAddressInterceptor peerAddressInterceptor() {
        return new PeerAddressInterceptor();
    }

    @Bean
    ButterflyGrpcExceptionHandler grpcExceptionHandler() {
        return new ButterflyGrpcExceptionHandler();
    }
}
