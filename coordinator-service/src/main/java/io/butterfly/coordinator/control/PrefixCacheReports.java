package io.butterfly.coordinator.control;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What each worker's stage last said of its prefix cache, from its heartbeats: soft state of this replica (not in the
 * control log), shown in system/state and kept for a router that sends a prompt to the pipeline holding its prefix.
 */
public final class PrefixCacheReports {

    /**
     * One stage's prefix cache.
     *
     * @param blocks        full blocks held, of {@code blockTokens} positions each
     * @param queriedTokens prompt tokens in full blocks looked up since its partition loaded
     * @param hitTokens     of those, found in the cache
     */
    public record Report(boolean enabled, int blocks, int blockTokens, long bytes, long queriedTokens, long hitTokens,
                         long evictions) {

        public double hitRate() {
            return queriedTokens == 0 ? 0 : (double) hitTokens / queriedTokens;
        }
    }

    private final Map<String, Report> reports = new ConcurrentHashMap<>();

    public void report(String nodeId, Report report) {
        reports.put(nodeId, report);
    }

    /** Whether {@code nodeId} last reported its prefix cache on (false before it reported). */
    public boolean enabled(String nodeId) {
        Report r = reports.get(nodeId);
        return r != null && r.enabled();
    }

    /** The last report of each worker that sent one. */
    public Map<String, Report> reports() {
        return Map.copyOf(reports);
    }
}
