package io.butterfly.coordinator.inference.engine;

/**
 * What the scheduler may put together (names after vLLM's where it has one).
 *
 * @param maxNumSeqs          sequences running at once (holding KV caches on the stages); more wait
 * @param maxNumBatchedTokens tokens one micro-batch may carry: every running decode (1 each) plus prompt chunks; at
 *                            least a chunk and a decode of every running sequence
 * @param prefillChunkTokens  prompts are fed in chunks that end at multiples of this (or at the prompt's end), so a
 *                            sequence is always cut the same way, whatever it is batched with; a long prompt delays
 *                            running decodes by at most one chunk
 * @param maxWaiting          requests waiting to run; one more is refused (429, Retry-After)
 * @param microBatches        micro-batches in the pipeline at once (disjoint sets of sequences), so that every stage
 *                            computes while the others do; 1 = one at a time, 0 = one per pipeline stage
 * @param maxRunningPerKey    sequences of one API key running at once; its others wait while other keys' start
 * @param maxWaitingPerKey    sequences of one API key waiting; one more is refused (429). Requests without a key (no
 *                            keys set) are one tenant that neither per-key limit binds
 */
public record SchedulerSettings(int maxNumSeqs, int maxNumBatchedTokens, int prefillChunkTokens, int maxWaiting,
                                int microBatches, int maxRunningPerKey, int maxWaitingPerKey) {

    /** Without per-key limits. */
    public SchedulerSettings(int maxNumSeqs, int maxNumBatchedTokens, int prefillChunkTokens, int maxWaiting,
                             int microBatches) {
        this(maxNumSeqs, maxNumBatchedTokens, prefillChunkTokens, maxWaiting, microBatches, Integer.MAX_VALUE,
                Integer.MAX_VALUE);
    }

    public SchedulerSettings {
        if (maxRunningPerKey < 1 || maxWaitingPerKey < 0) {
            throw new IllegalArgumentException("max-running-per-key must be at least 1 and max-waiting-per-key not"
                    + " negative, got " + maxRunningPerKey + ", " + maxWaitingPerKey);
        }
        if (maxNumSeqs < 1 || maxWaiting < 0 || microBatches < 0) {
            throw new IllegalArgumentException("max-num-seqs must be at least 1, max-waiting and micro-batches-in-flight"
                    + " not negative, got " + maxNumSeqs + ", " + maxWaiting + ", " + microBatches);
        }
        // Room for every running decode and a prompt chunk: the oldest prompt being fed always advances.
        if (prefillChunkTokens < 1 || maxNumBatchedTokens < prefillChunkTokens + maxNumSeqs) {
            throw new IllegalArgumentException("max-num-batched-tokens (" + maxNumBatchedTokens + ") must hold a"
                    + " prefill chunk (prefill-chunk-tokens " + prefillChunkTokens + ", at least 1) and a decode of"
                    + " every running sequence (max-num-seqs " + maxNumSeqs + ")");
        }
    }

    /** Micro-batches in flight through a pipeline of {@code stages}. */
    public int microBatchesFor(int stages) {
        return microBatches > 0 ? microBatches : Math.max(1, stages);
    }
}
