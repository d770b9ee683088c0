package io.butterfly.worker.engine;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.tensor.SliceTree;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.IntFunction;

/**
 * A stage's layers computed by head shards (docs/sharding.md, "Head parallelism"): for each layer, every shard is asked
 * for its attention partial at once, their sums merged by the slice tree as they arrive and added to the input; then
 * the same for the MLP. The tree fixes every addition, so the result has the same bits whatever the number of shards
 * and whichever answers first. A shard that fails or does not answer within the timeout fails the step
 * ({@link HeadShardUnavailableException}); the shards' caches are written by position, so the step retried computes
 * the same.
 */
public final class HeadParallelLayers {

    private final ModelConfig config;
    private final int layerStart;
    private final int layerEnd;
    private final SliceTree tree;
    private final List<SliceTree.Range> shards;
    private final HeadExchange exchange;
    private final Duration timeout;

    /**
     * @param shards  the shards' subtrees, covering the layer's slices in order ({@link SliceTree#cut})
     * @param timeout how long a shard may take to answer a layer's half
     */
    public HeadParallelLayers(ModelConfig config, int layerStart, int layerEnd, List<SliceTree.Range> shards,
                              HeadExchange exchange, Duration timeout) {
        this.config = config;
        this.layerStart = layerStart;
        this.layerEnd = layerEnd;
        this.tree = new SliceTree(config.numKvHeads());
        this.shards = List.copyOf(shards);
        this.exchange = exchange;
        this.timeout = timeout;
        tree.merge(this.shards, 1); // refuses shards that are not subtrees covering the slices in order
    }

    /**
     * @param batch the step's sequences in row order
     * @param x     the first layer's input {@code [rows, hidden]}
     * @return the last layer's output {@code [rows, hidden]}
     */
    public float[] forward(List<SequenceChunk> batch, float[] x) {
        if (x.length != batch.stream().mapToInt(SequenceChunk::numTokens).sum() * config.hiddenSize()) {
            throw new IllegalArgumentException(x.length + " values for a batch of "
                    + batch.stream().mapToInt(SequenceChunk::numTokens).sum() + " tokens of " + config.hiddenSize());
        }
        for (int layer = layerStart; layer < layerEnd; layer++) {
            int l = layer;
            float[] in = x;
            x = plus(x, merged(l, i -> exchange.attention(i, l, batch, in), x.length));
            float[] mid = x;
            x = plus(x, merged(l, i -> exchange.mlp(i, l, mid), x.length));
        }
        return x;
    }

    private float[] merged(int layer, IntFunction<CompletableFuture<float[]>> ask, int length) {
        SliceTree.Merge merge = tree.merge(shards, length);
        // The last shard is asked first: shard 0 is this stage's own, computed on the calling thread (the engine's)
        // once the others' calls are on their way.
        List<CompletableFuture<Void>> taken = new ArrayList<>(java.util.Collections.nCopies(shards.size(), null));
        for (int i = shards.size() - 1; i >= 0; i--) {
            int shard = i;
            taken.set(i, ask.apply(i).thenAccept(partial -> merge.add(shard, partial))); // in arrival order
        }
        long deadline = System.nanoTime() + timeout.toNanos();
        for (int i = 0; i < taken.size(); i++) {
            try {
                taken.get(i).get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for head shard " + i, e);
            } catch (ExecutionException | TimeoutException e) {
                throw new HeadShardUnavailableException(i, layer, e instanceof ExecutionException ? e.getCause() : e);
            }
        }
        return merge.result();
    }

    private static float[] plus(float[] a, float[] b) {
        float[] s = new float[a.length];
        for (int i = 0; i < s.length; i++) {
            s[i] = a[i] + b[i];
        }
        return s;
    }
}
