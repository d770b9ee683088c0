package io.butterfly.discovery.membership;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The member table of one discovery replica, in memory (not replicated, no expiry): where the {@code static}
 * and {@code consul} backends record the joins this replica admitted, and what tests use.
 */
public class MembershipRegistry implements MembershipStore {

    private final Map<String, MemberView> members = new ConcurrentHashMap<>();

    @Override
    public synchronized MemberView admit(MemberView candidate) {
        MemberView admitted = MembershipStore.rejoined(members.get(candidate.nodeId()), candidate);
        members.put(admitted.nodeId(), admitted);
        return admitted;
    }

    @Override
    public Optional<MemberView> acknowledge(String nodeId, long nowMs) {
        return Optional.ofNullable(members.computeIfPresent(nodeId, (id, m) -> m.acknowledgedAt(nowMs)));
    }

    @Override
    public Optional<MemberView> touch(String nodeId, long nowMs) {
        return Optional.ofNullable(members.computeIfPresent(nodeId, (id, m) -> m.seenAt(nowMs)));
    }

    @Override
    public Optional<MemberView> member(String nodeId) {
        return Optional.ofNullable(members.get(nodeId));
    }

    @Override
    public int size() {
        return members.size();
    }

    @Override
    public boolean leave(String nodeId) {
        return members.remove(nodeId) != null;
    }

    @Override
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
