package io.butterfly.worker.engine;

import java.util.List;

/**
 * Executes one partition of a model for packed batches of sequences, keeping each sequence's KV cache. Safe to call
 * from any thread: steps run one at a time.
 */
public interface PartitionExecutor extends AutoCloseable {

    PartitionSpec spec();

    /**
     * One pipeline step for a packed batch: tokens of all sequences concatenated in batch order.
     * Input: token ids (first stage, hasEmbedding) or hidden states {@code [totalTokens, hidden]}.
     * Output: hidden states {@code [totalTokens, hidden]}, or, when hasHead, logits
     * {@code [sequences, vocab]} at the last position of each chunk that does not skip them.
     *
     * @throws IllegalArgumentException if a chunk's position differs from its cached length, a sequence
     *                                  appears twice, or the input does not match the batch
     */
    StageResult forward(List<SequenceChunk> batch, StageInput input);

    /**
     * As {@link #forward(List, StageInput)}, with each layer's output shown to {@code probe} (null: none) as it is
     * computed: every chunk is computed whole (none answered from what was sent before or from the prefix cache), so
     * the probe sees all of the batch's rows, and the result is the same bits as without a probe.
     *
     * @throws UnsupportedOperationException if this stage cannot show its layers ({@link #layerProbes()} false)
     */
    default StageResult forward(List<SequenceChunk> batch, StageInput input, LayerProbe probe) {
        if (probe == null) {
            return forward(batch, input);
        }
        throw new UnsupportedOperationException("this stage computes its layers in one call and cannot show them one by one");
    }

    /**
     * Whether {@link #forward(List, StageInput, LayerProbe)} takes a probe: the native kernels' Llama-family stages do;
     * libtorch's compute all a stage's layers in one TorchScript call.
     */
    default boolean layerProbes() {
        return false;
    }

    /**
     * Drops that sequence's KV cache. A sequence with no cache here yet is remembered as released, so a step
     * of it that arrives after its release (overtaken on another stream) is refused instead of caching anew.
     */
    void release(String sequenceId);

    /** Frees the caches of sequences that ran no step for {@code idleNanos}; the sequences evicted. */
    List<String> evictIdle(long idleNanos);

    int cachedSequences();

    /** Memory all sequences' KV caches take now. */
    long cachedBytes();

    /** What the stage's projections compute with, e.g. "oneDNN float32" or "native Q4_0+Q6_K (avx2)". */
    String projections();

    /** Memory the stage's weights take as held (quantized weights as their blocks). */
    long weightBytes();

    /** Tokens of steps answered from what this stage sent before, without computing them (a resume's replay). */
    long answeredTokens();

    /** What the stage's prefix cache holds and did (see {@code PrefixCache}). */
    default PrefixCacheStats prefixCacheStats() {
        return PrefixCacheStats.OFF;
    }

    @Override
    void close();
}
