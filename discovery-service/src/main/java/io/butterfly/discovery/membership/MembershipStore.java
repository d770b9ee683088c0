package io.butterfly.discovery.membership;

import java.util.List;
import java.util.Optional;

/**
 * Where discovery keeps its member table. Admission decides who may join; a store only records the outcome
 * and publishes the listing. Backends (chosen by {@code butterfly.discovery.backend}): {@code embedded}
 * (Hazelcast, replicated across discovery replicas, entries expire without heartbeats), {@code static}
 * (a configured seed list plus the nodes that joined this replica) and {@code consul} (the listing is the
 * Consul catalog filtered by cluster tag).
 *
 * <p>A node that joins again with the same id (a restart, maybe on another port) replaces its entry and
 * keeps its first join time; it must acknowledge again before it is listed.
 */
public interface MembershipStore {

    /** Records an admitted node as a pending (not yet acknowledged) member. */
    MemberView admit(MemberView candidate);

    /** JOIN_ACK: the member is now part of the listed view. */
    Optional<MemberView> acknowledge(String nodeId, long nowMs);

    /** Heartbeat: refreshes last_seen (and, where entries expire, their time to live). */
    Optional<MemberView> touch(String nodeId, long nowMs);

    /** A member that joined through discovery (pending or acknowledged), as admission needs it. */
    Optional<MemberView> member(String nodeId);

    /** Members counted against the cluster's capacity (pending ones included: they hold a slot). */
    int size();

    boolean leave(String nodeId);

    /** Listed members sorted by id; {@code role == null} lists every role. */
    List<MemberView> members(String role);

    /** Admits a candidate over an existing entry: a rejoin keeps the first join time and is pending again. */
    static MemberView rejoined(MemberView existing, MemberView candidate) {
        long joinedAt = existing == null ? candidate.joinedAtMs() : existing.joinedAtMs();
        return new MemberView(candidate.nodeId(), candidate.role(), candidate.host(), candidate.grpcPort(),
                candidate.httpPort(), candidate.version(), joinedAt, candidate.lastSeenMs(), candidate.capabilities(),
                candidate.publicKeyHex(), false);
    }
}
