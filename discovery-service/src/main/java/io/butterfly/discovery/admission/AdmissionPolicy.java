package io.butterfly.discovery.admission;

import io.butterfly.discovery.membership.ProtocolVersion;
import java.time.Duration;
import java.util.Map;

/**
 * What the admission chain enforces (the config layer fills it from the typed properties).
 *
 * @param nodeId           discovery's own node id (envelopes addressed elsewhere are refused)
 * @param clusterName      the cluster's name
 * @param protocolVersion  our protocol version
 * @param features         feature flags we support
 * @param requiredFeatures flags a joiner must support
 * @param maxMembers       cluster capacity
 * @param trustedKeys      node id → hex Ed25519 key
 * @param trustOnFirstUse  admit unknown ids and pin their first key (embedded default only)
 * @param replayWindow     accepted timestamp skew, both directions
 * @param joinBurst        join attempts a source address may make at once
 * @param joinsPerSecond   sustained join attempts per source address
 */
public record AdmissionPolicy(String nodeId, String clusterName, ProtocolVersion protocolVersion, long features,
                              long requiredFeatures, int maxMembers, Map<String, String> trustedKeys,
                              boolean trustOnFirstUse, Duration replayWindow, int joinBurst, double joinsPerSecond) {
}
