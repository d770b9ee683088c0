package io.butterfly.discovery.config;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * Discovery settings.
 *
 * @param clusterName     joins naming another cluster are refused
 * @param protocolVersion this node's protocol version (major.minor); majors must match to join
 * @param maxMembers      members beyond this are refused with CLUSTER_FULL
 */
@ConfigurationProperties("butterfly.discovery")
public record DiscoveryProperties(
        @DefaultValue("butterfly") String clusterName,
        @DefaultValue("1.0") String protocolVersion,
        @DefaultValue("256") int maxMembers) {
}
