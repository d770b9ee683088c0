package io.butterfly.coordinator.inference.engine;

/**
 * A prompt's full token blocks named by a hash chain, as the stages' prefix caches key them: block i's hash covers
 * tokens [0, (i + 1) * blockTokens), so equal hashes mean equal prefixes. The router and the scheduler's cached-prefix
 * memory name blocks alike.
 */
final class PromptBlocks {

    private PromptBlocks() {
    }

    /** The chain hash of each of the first {@code count} full blocks of {@code blockTokens} tokens. */
    static long[] chain(long[] prompt, int blockTokens, int count) {
        long[] out = new long[count];
        long h = 0x9E3779B97F4A7C15L;
        for (int b = 0; b < count; b++) {
            for (int t = b * blockTokens; t < (b + 1) * blockTokens; t++) {
                h = mix(h ^ prompt[t]);
            }
            out[b] = h;
        }
        return out;
    }

    /** SplitMix64's finalizer: every input bit moves every output bit. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
