package io.butterfly.discovery.hazelcast;

import io.butterfly.discovery.membership.CapabilitiesCodec;
import io.butterfly.discovery.membership.MemberView;

/** A member as a JSON document in the replicated map (capabilities as their own JSON, readable in tools). */
record StoredMember(String nodeId, String role, String host, int grpcPort, int httpPort, String version,
                    long joinedAtMs, long lastSeenMs, String capabilities, String publicKeyHex, boolean acknowledged) {

    static StoredMember of(MemberView m, CapabilitiesCodec codec) {
        return new StoredMember(m.nodeId(), m.role(), m.host(), m.grpcPort(), m.httpPort(), m.version(), m.joinedAtMs(),
                m.lastSeenMs(), codec.toJson(m.capabilities()), m.publicKeyHex(), m.acknowledged());
    }

    MemberView view(CapabilitiesCodec codec) {
        return new MemberView(nodeId, role, host, grpcPort, httpPort, version, joinedAtMs, lastSeenMs,
                codec.fromJson(capabilities), publicKeyHex, acknowledged);
    }
}
