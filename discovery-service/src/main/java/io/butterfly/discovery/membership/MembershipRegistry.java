package io.butterfly.discovery.membership;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The embedded membership backend: the member table, in memory. Whether a node may join is decided
 * before (admission chain); this class only records the outcome.
 *
 * <p>A node that joins again with the same key (a restart, maybe on another port) replaces its entry
 * and keeps its first join time; it must acknowledge again before it is listed.
 */
public class MembershipRegistry {

    private final Map<String, MemberView> members = new ConcurrentHashMap<>();

    /** Records an admitted node as a pending (not yet acknowledged) member. */
    public synchronized MemberView admit(MemberView candidate) {
        MemberView existing = members.get(candidate.nodeId());
        long joinedAt = existing == null ? candidate.joinedAtMs() : existing.joinedAtMs();
        MemberView admitted = new MemberView(candidate.nodeId(), candidate.role(), candidate.host(), candidate.grpcPort(),
                candidate.httpPort(), candidate.version(), joinedAt, candidate.lastSeenMs(), candidate.capabilities(),
                candidate.publicKeyHex(), false);
        members.put(admitted.nodeId(), admitted);
        return admitted;
    }

    /** JOIN_ACK: the member is now part of the listed view. */
    public Optional<MemberView> acknowledge(String nodeId, long nowMs) {
        return Optional.ofNullable(members.computeIfPresent(nodeId, (id, m) -> m.acknowledgedAt(nowMs)));
    }

    /** Heartbeat: refreshes last_seen. */
    public Optional<MemberView> touch(String nodeId, long nowMs) {
        return Optional.ofNullable(members.computeIfPresent(nodeId, (id, m) -> m.seenAt(nowMs)));
    }

    public Optional<MemberView> member(String nodeId) {
        return Optional.ofNullable(members.get(nodeId));
    }

    /** Members counted against the cluster's capacity (pending ones included: they hold a slot). */
    public int size() {
        return members.size();
    }

    public boolean leave(String nodeId) {
        return members.remove(nodeId) != null;
    }

    /** Acknowledged members sorted by id; {@code role == null} lists every role. */
    public List<MemberView> members(String role) {
        List<MemberView> out = new ArrayList<>();
        for (MemberView m : members.values()) {
            if (m.acknowledged() && (role == null || role.equals(m.role()))) {
                out.add(m);
            }
        }
        out.sort(Comparator.comparing(MemberView::nodeId));
        return out;
    }
}
