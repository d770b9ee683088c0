package io.butterfly.discovery.hazelcast;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.butterfly.discovery.membership.CapabilitiesCodec;
import io.butterfly.discovery.membership.MemberView;
import io.butterfly.discovery.membership.MembershipStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import tools.jackson.databind.json.JsonMapper;

/**
 * The {@code embedded} backend: the member table in a Hazelcast map shared by every discovery replica, so a
 * node admitted by one replica is listed by all. Each entry carries a time to live that every write (join,
 * acknowledgement, heartbeat) starts again: a node that stops heartbeating drops out of the listing, and its
 * next heartbeat is answered NOT_FOUND, which makes it join again.
 *
 * <p>Updates run under the map's per-key lock (a plain IMap lock, not the CP subsystem), so a heartbeat and
 * an acknowledgement reaching two replicas at once do not lose each other's write.
 */
public final class HazelcastMembershipStore implements MembershipStore {

    /** The replicated map's name; its configuration lives in {@code config/HazelcastConfiguration}. */
    public static final String MAP_NAME = "butterfly-members";

    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final IMap<String, String> members;
    private final long ttlMs;
    private final CapabilitiesCodec codec;

    public HazelcastMembershipStore(HazelcastInstance hazelcast, Duration memberTtl, CapabilitiesCodec codec) {
        if (memberTtl.isNegative() || memberTtl.isZero()) {
            throw new IllegalArgumentException("member-ttl must be positive, was " + memberTtl);
        }
        this.members = hazelcast.getMap(MAP_NAME);
        this.ttlMs = memberTtl.toMillis();
        this.codec = codec;
    }

    @Override
    public MemberView admit(MemberView candidate) {
        String id = candidate.nodeId();
        members.lock(id);
        try {
            MemberView admitted = MembershipStore.rejoined(read(members.get(id)), candidate);
            write(admitted);
            return admitted;
        } finally {
            members.unlock(id);
        }
    }

    @Override
    public Optional<MemberView> acknowledge(String nodeId, long nowMs) {
        return update(nodeId, m -> m.acknowledgedAt(nowMs));
    }

    @Override
    public Optional<MemberView> touch(String nodeId, long nowMs) {
        return update(nodeId, m -> m.seenAt(nowMs));
    }

    @Override
    public Optional<MemberView> member(String nodeId) {
        return Optional.ofNullable(read(members.get(nodeId)));
    }

    @Override
    public int size() {
        return members.size();
    }

    @Override
    public boolean leave(String nodeId) {
        // Under the key's lock like update(): a heartbeat's read-modify-write must not put a left member back.
        members.lock(nodeId);
        try {
            return members.remove(nodeId) != null;
        } finally {
            members.unlock(nodeId);
        }
    }

    @Override
    public List<MemberView> members(String role) {
        List<MemberView> out = new ArrayList<>();
        for (String json : members.values()) {
            MemberView m = read(json);
            if (m.acknowledged() && (role == null || role.equals(m.role()))) {
                out.add(m);
            }
        }
        out.sort(Comparator.comparing(MemberView::nodeId));
        return out;
    }

    private Optional<MemberView> update(String nodeId, UnaryOperator<MemberView> change) {
        members.lock(nodeId);
        try {
            MemberView current = read(members.get(nodeId));
            if (current == null) {
                return Optional.empty(); // never joined, left, or expired: the node has to join (again)
            }
            MemberView updated = change.apply(current);
            write(updated);
            return Optional.of(updated);
        } finally {
            members.unlock(nodeId);
        }
    }

    private void write(MemberView m) {
        members.set(m.nodeId(), JSON.writeValueAsString(StoredMember.of(m, codec)), ttlMs, TimeUnit.MILLISECONDS);
    }

    private MemberView read(String json) {
        return json == null ? null : JSON.readValue(json, StoredMember.class).view(codec);
    }
}
