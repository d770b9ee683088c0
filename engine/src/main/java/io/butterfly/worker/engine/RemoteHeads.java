package io.butterfly.worker.engine;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * How a head-parallel stage asks the workers holding its other head shards for their partials (the gateway's gRPC
 * client, WorkerService.Heads).
 */
public interface RemoteHeads {

    /**
     * @param x        the layer's input, {@code rows} rows of the model's hidden size
     * @param released sequences that ended since the last call: the shard frees their caches first
     * @return the shard's attention partial of model layer {@code layer} ({@link HeadShard#attention})
     */
    CompletableFuture<float[]> attention(HeadPlacement.Holder shard, int layer, List<SequenceChunk> batch, int rows,
                                         float[] x, List<String> released);

    /** @return the shard's MLP partial of model layer {@code layer} ({@link HeadShard#mlp}) */
    CompletableFuture<float[]> mlp(HeadPlacement.Holder shard, int layer, int rows, float[] x);
}
