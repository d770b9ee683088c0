package io.butterfly.discovery.hazelcast;

import com.hazelcast.core.HazelcastInstance;
import com.hazelcast.map.IMap;
import io.butterfly.discovery.admission.SeenMessageIds;
import java.util.concurrent.TimeUnit;

/** The accepted message ids of every replica of the embedded backend, in the replicated map beside the members. */
public final class HazelcastSeenMessageIds implements SeenMessageIds {

    private final IMap<String, Long> seen;

    public HazelcastSeenMessageIds(HazelcastInstance hazelcast) {
        this.seen = hazelcast.getMap("butterfly-message-ids");
    }

    @Override
    public boolean firstSighting(String key, long nowMs, long retainMs) {
        // Atomic across the cluster; the entry expires once the timestamp window refuses its message anyway.
        return seen.putIfAbsent(key, nowMs, retainMs, TimeUnit.MILLISECONDS) == null;
    }
}
