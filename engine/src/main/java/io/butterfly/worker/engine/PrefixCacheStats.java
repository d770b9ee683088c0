package io.butterfly.worker.engine;

/**
 * What a stage's prefix cache holds and did since it started.
 *
 * @param enabled       whether the stage caches prefixes
 * @param blocks        full blocks held ({@value PrefixCache#BLOCK_TOKENS} positions each)
 * @param bytes         memory they take, counted against the KV budget
 * @param queriedTokens prompt tokens in full blocks looked up
 * @param hitTokens     of those, tokens found (restored instead of computed)
 * @param evictions     blocks evicted to make room, least recently used first
 */
public record PrefixCacheStats(boolean enabled, int blocks, long bytes, long queriedTokens, long hitTokens,
                               long evictions) {

    public static final PrefixCacheStats OFF = new PrefixCacheStats(false, 0, 0, 0, 0, 0);

    /** Positions per block. */
    public static int blockTokens() {
        return PrefixCache.BLOCK_TOKENS;
    }

    /** Hit tokens over queried tokens, 0 before any lookup. */
    public double hitRate() {
        return queriedTokens == 0 ? 0 : (double) hitTokens / queriedTokens;
    }
}
