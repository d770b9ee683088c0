package io.butterfly.discovery.admission;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The message ids a discovery replica has accepted. Replicas that share a member table must share this too:
 * otherwise a captured JOIN or LEAVE replayed to another replica within the timestamp window passes.
 */
public interface SeenMessageIds {

    /** Records {@code key} as seen at {@code nowMs} for {@code retainMs}; false if it was seen already. */
    boolean firstSighting(String key, long nowMs, long retainMs);

    /** This replica's own table (a backend whose replicas share no state). */
    static SeenMessageIds inMemory() {
        return new SeenMessageIds() {
            private final Map<String, Long> seen = new ConcurrentHashMap<>(); // key -> first seen (ms)
            private long lastSweepMs;

            @Override
            public boolean firstSighting(String key, long nowMs, long retainMs) {
                sweep(nowMs, retainMs);
                return seen.putIfAbsent(key, nowMs) == null;
            }

            private synchronized void sweep(long nowMs, long retainMs) {
                if (nowMs - lastSweepMs >= 1000) {
                    lastSweepMs = nowMs;
                    seen.values().removeIf(t -> nowMs - t > retainMs);
                }
            }
        };
    }
}
