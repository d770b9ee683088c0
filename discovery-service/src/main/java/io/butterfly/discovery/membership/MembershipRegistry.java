package io.butterfly.discovery.membership;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The member table of one discovery replica, in memory (not replicated): where the {@code static} and
 * {@code consul} backends record the joins this replica admitted, and what tests use. Like the embedded
 * backend's entries, a member not seen (join, acknowledgement or heartbeat) for the time to live is forgotten:
 * it no longer holds a capacity slot or stays listed after it died, and its next heartbeat is answered
 * NOT_FOUND, which makes it join again.
 */
public class MembershipRegistry implements MembershipStore {

    private final Map<String, MemberView> members = new ConcurrentHashMap<>();
    private final Clock clock;
    /** 0: entries never expire (tests that drive the table by hand). */
    private final long ttlMs;

    /** A table whose entries never expire. */
    public MembershipRegistry() {
        this(Clock.systemUTC(), Duration.ZERO);
    }

    /** @param ttl how long a member stays without being seen (zero: for ever) */
    public MembershipRegistry(Clock clock, Duration ttl) {
        if (ttl.isNegative()) {
            throw new IllegalArgumentException("member-ttl must not be negative, was " + ttl);
        }
        this.clock = clock;
        this.ttlMs = ttl.toMillis();
    }

    @Override
    public synchronized MemberView admit(MemberView candidate) {
        expire();
        MemberView admitted = MembershipStore.rejoined(members.get(candidate.nodeId()), candidate);
        members.put(admitted.nodeId(), admitted);
        return admitted;
    }

    @Override
    public Optional<MemberView> acknowledge(String nodeId, long nowMs) {
        expire();
        return Optional.ofNullable(members.computeIfPresent(nodeId, (id, m) -> m.acknowledgedAt(nowMs)));
    }

    @Override
    public Optional<MemberView> touch(String nodeId, long nowMs) {
        expire();
        return Optional.ofNullable(members.computeIfPresent(nodeId, (id, m) -> m.seenAt(nowMs)));
    }

    @Override
    public Optional<MemberView> member(String nodeId) {
        expire();
        return Optional.ofNullable(members.get(nodeId));
    }

    @Override
    public int size() {
        expire();
        return members.size();
    }

    @Override
    public boolean leave(String nodeId) {
        return members.remove(nodeId) != null;
    }

    @Override
    public List<MemberView> members(String role) {
        expire();
        List<MemberView> out = new ArrayList<>();
        for (MemberView m : members.values()) {
            if (m.acknowledged() && (role == null || role.equals(m.role()))) {
                out.add(m);
            }
        }
        out.sort(Comparator.comparing(MemberView::nodeId));
        return out;
    }

    /** Forgets the members not seen for the time to live (checked on every access: the table is small). */
    private void expire() {
        if (ttlMs > 0) {
            long now = clock.millis();
            members.values().removeIf(m -> now - m.lastSeenMs() > ttlMs);
        }
    }
}
