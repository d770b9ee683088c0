package io.butterfly.worker.engine;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * How a head-parallel stage asks its shards for their partials ({@link HeadParallelLayers}): the workers holding them,
 * or {@link HeadShard}s of this process. Shard {@code i} is the i-th subtree of the layer's slice tree.
 */
public interface HeadExchange {

    /**
     * @param layer the model's layer
     * @param batch the step's sequences in row order
     * @param x     the layer's input {@code [rows, hidden]}
     * @return the shard's attention partial ({@link HeadShard#attention}), {@code [rows, hidden]}
     */
    CompletableFuture<float[]> attention(int shard, int layer, List<SequenceChunk> batch, float[] x);

    /**
     * @param x the layer's input plus its merged attention {@code [rows, hidden]}
     * @return the shard's MLP partial ({@link HeadShard#mlp}), {@code [rows, hidden]}
     */
    CompletableFuture<float[]> mlp(int shard, int layer, float[] x);
}
