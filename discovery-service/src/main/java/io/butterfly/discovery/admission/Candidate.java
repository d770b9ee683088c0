package io.butterfly.discovery.admission;

import io.butterfly.discovery.membership.Capabilities;

/**
 * The node a join asks to add.
 *
 * @param role              {@code worker}, {@code coordinator} or {@code registry}; null when the request names none
 * @param publicKey         the key the member entry carries (may be empty; must then equal the request's)
 * @param capabilities      what the node reports it can do
 */
public record Candidate(String nodeId, String role, String host, int grpcPort, int httpPort, String version,
                        byte[] publicKey, Capabilities capabilities) {
}
