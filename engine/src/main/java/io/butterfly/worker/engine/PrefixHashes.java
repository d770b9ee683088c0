package io.butterfly.worker.engine;

import com.google.common.hash.HashFunction;
import com.google.common.hash.Hasher;
import com.google.common.hash.Hashing;

/**
 * The hash chain of a sequence's full blocks of input keys (as vLLM's automatic prefix caching keys its blocks): block
 * {@code i}'s hash covers the hash of block {@code i - 1} and its own {@link PrefixCache#BLOCK_TOKENS} keys, so equal
 * hashes mean equal inputs from position 0 through the end of the block (up to a 2^-64 accident). A stage's input
 * keys are token ids on the first stage and hashes of the hidden rows on the others ({@link InputKeys}); the hidden
 * rows of a prefix are a function of its tokens, so every stage keys a prompt's prefix alike without being told the
 * tokens.
 */
final class PrefixHashes {

    private static final HashFunction HASH = Hashing.murmur3_128();

    private PrefixHashes() {
    }

    /**
     * The chained hashes of the full blocks of {@code keys[from, from + n)}, continuing {@code previous} (0 for a chain
     * that starts at position 0).
     */
    static long[] chain(long previous, long[] keys, int from, int n, int blockTokens) {
        long[] hashes = new long[n / blockTokens];
        long parent = previous;
        for (int b = 0; b < hashes.length; b++) {
            Hasher h = HASH.newHasher().putLong(parent);
            for (int t = 0; t < blockTokens; t++) {
                h.putLong(keys[from + b * blockTokens + t]);
            }
            parent = h.hash().asLong();
            hashes[b] = parent;
        }
        return hashes;
    }
}
