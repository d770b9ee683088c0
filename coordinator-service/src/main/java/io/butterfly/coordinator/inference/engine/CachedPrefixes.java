package io.butterfly.coordinator.inference.engine;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The prompt blocks this engine's pipeline answered on every stage lately, so held in every stage's prefix cache
 * (docs/serving.md#prefix-caching): each prompt's full blocks of {@link #BLOCK_TOKENS}, hashed as a chain (a block's
 * hash covers every token before it, as the stages key them), the least recently used forgotten beyond a bound. The
 * scheduler feeds a prompt whose leading blocks are here in one step and counts only the tokens the stages compute.
 *
 * <p>An estimate: a stage may have evicted a block since (its KV budget needed the room), and then computes it; the
 * output is the same either way (a hit is bit for bit a miss), only that step is longer. Forgotten whenever a stage may
 * have lost its cache (a failed step, a new epoch). Pure; the engine's thread owns it.
 */
final class CachedPrefixes {

    /** Positions per block of the stages' prefix caches ({@code PrefixCache.BLOCK_TOKENS}). */
    static final int BLOCK_TOKENS = 16;
    /** Blocks remembered: what a stage keeps at most without a KV budget ({@code PrefixCache.UNBUDGETED_BLOCKS}). */
    static final int MAX_BLOCKS = 4096;

    private final Map<Long, Boolean> blocks = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Boolean> eldest) {
            return size() > MAX_BLOCKS;
        }
    };

    /** The full blocks of {@code prompt}'s first {@code upTo} tokens are in every stage's cache. */
    void answered(long[] prompt, int upTo) {
        long[] hashes = chain(prompt, Math.min(upTo, prompt.length) / BLOCK_TOKENS);
        for (long h : hashes) {
            blocks.put(h, Boolean.TRUE);
        }
    }

    /**
     * The leading tokens of {@code prompt} held here, in whole blocks, leaving at least its last token (which a step
     * computes for its logits); the blocks found become the most recently used.
     */
    int cachedTokens(long[] prompt) {
        long[] hashes = chain(prompt, (prompt.length - 1) / BLOCK_TOKENS);
        int n = 0;
        while (n < hashes.length && blocks.get(hashes[n]) != null) {
            n++;
        }
        return n * BLOCK_TOKENS;
    }

    /** A stage may have lost its cache: nothing is known held any more. */
    void forget() {
        blocks.clear();
    }

    int size() {
        return blocks.size();
    }

    private static long[] chain(long[] prompt, int count) {
        return PromptBlocks.chain(prompt, BLOCK_TOKENS, count);
    }
}
