package io.butterfly.discovery.config;

import com.hazelcast.config.Config;
import com.hazelcast.config.JoinConfig;
import com.hazelcast.config.MapConfig;
import com.hazelcast.config.NetworkConfig;
import com.hazelcast.core.Hazelcast;
import com.hazelcast.core.HazelcastInstance;
import io.butterfly.discovery.hazelcast.HazelcastMembershipStore;
import io.butterfly.discovery.hazelcast.HazelcastSeenMessageIds;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The embedded Hazelcast member behind the {@code embedded} membership backend, configured in code: the cluster
 * is named after the Butterfly cluster, members find each other only through the configured TCP-IP list (no
 * multicast, no cloud auto-detection, no phone-home), and it binds one address and one port.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(prefix = "butterfly.discovery", name = "backend", havingValue = "embedded", matchIfMissing = true)
public class HazelcastConfiguration {

    private static final Logger log = LoggerFactory.getLogger(HazelcastConfiguration.class);

    @Bean(destroyMethod = "shutdown")
    HazelcastInstance hazelcastInstance(DiscoveryProperties props) {
        long start = System.nanoTime();
        HazelcastInstance hz = Hazelcast.newHazelcastInstance(
                hazelcastConfig(props.clusterName(), "discovery-" + props.nodeId(), props.hazelcast(), props.memberTtl()));
        log.info("embedded membership: Hazelcast member {} of cluster '{}' ({} member(s)) up in {} ms",
                hz.getCluster().getLocalMember().getAddress(), props.clusterName(), hz.getCluster().getMembers().size(),
                (System.nanoTime() - start) / 1_000_000);
        return hz;
    }

    /** Replicas share the accepted message ids as they share the members: a replay to another replica is refused. */
    @Bean
    HazelcastSeenMessageIds sharedMessageIds(HazelcastInstance hazelcast) {
        return new HazelcastSeenMessageIds(hazelcast);
    }

    /** The Hazelcast configuration of one discovery replica (public for tests that run several in one JVM). */
    public static Config hazelcastConfig(String clusterName, String instanceName, DiscoveryProperties.Hazelcast hz,
                                         Duration memberTtl) {
        Config config = new Config();
        config.setClusterName(clusterName);
        config.setInstanceName(instanceName);
        config.setProperty("hazelcast.phone.home.enabled", "false");
        config.setProperty("hazelcast.logging.type", "slf4j");
        config.setProperty("hazelcast.shutdownhook.enabled", "false"); // Spring shuts it down with the context
        config.setProperty("hazelcast.health.monitoring.level", "OFF");
        // Bind and advertise exactly one address: no interface scan, no lookups beyond it.
        config.setProperty("hazelcast.local.localAddress", hz.bindAddress());
        config.setProperty("hazelcast.socket.bind.any", "false");
        // A membership table is tiny: few partitions start and migrate faster; replicas must all agree on it.
        config.setProperty("hazelcast.partition.count", "31");
        // The first replica need not wait for others before it becomes master.
        config.setProperty("hazelcast.wait.seconds.before.join", "0");
        config.getMetricsConfig().setEnabled(false);
        config.getJetConfig().setEnabled(false);

        NetworkConfig network = config.getNetworkConfig();
        network.setPort(hz.port()).setPortAutoIncrement(false);
        JoinConfig join = network.getJoin();
        join.getMulticastConfig().setEnabled(false);
        join.getAutoDetectionConfig().setEnabled(false);
        List<String> members = hz.members().isEmpty() ? List.of(hz.bindAddress() + ":" + hz.port()) : hz.members();
        join.getTcpIpConfig().setEnabled(true).setMembers(members).setConnectionTimeoutSeconds(2);

        // One synchronous backup: a replica that dies loses no member entries. The per-entry TTL is set on each
        // write; the map-wide one is a safety net for entries written without it.
        config.addMapConfig(new MapConfig(HazelcastMembershipStore.MAP_NAME)
                .setBackupCount(1)
                .setTimeToLiveSeconds((int) Math.max(1, memberTtl.toSeconds())));
        return config;
    }
}
