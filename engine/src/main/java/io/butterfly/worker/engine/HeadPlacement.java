package io.butterfly.worker.engine;

import io.butterfly.common.tensor.SliceTree;
import java.util.List;
import java.util.Objects;

/**
 * How a stage's layers are split by heads over workers (docs/sharding.md, "Head parallelism"): head shards, each a
 * subtree of the layers' slice tree on one worker, listed in slice order, covering the slices once. Shard 0 is the
 * stage's own worker (it also holds the embedding or head, and merges); the others hold only their slices.
 *
 * @param holders the stage's shards in slice order
 * @param self    which shard this partition is
 */
public record HeadPlacement(List<Holder> holders, int self) {

    /**
     * @param nodeId the worker holding the shard
     * @param host   where to reach it (its gRPC address)
     * @param port   its gRPC port
     * @param slices its slices, a subtree of the slice tree
     */
    public record Holder(String nodeId, String host, int port, SliceTree.Range slices) {
        public Holder {
            Objects.requireNonNull(nodeId, "nodeId");
            Objects.requireNonNull(slices, "slices");
        }
    }

    public HeadPlacement {
        holders = List.copyOf(holders);
        if (holders.isEmpty() || self < 0 || self >= holders.size()) {
            throw new IllegalArgumentException("a head placement needs shards and this partition's among them, got "
                    + holders.size() + " shards and " + self);
        }
    }

    /**
     * The placement over a layer of {@code slices} slices (its key/value heads).
     *
     * @throws IllegalArgumentException the shards are not subtrees covering the slices in order
     */
    public HeadPlacement over(int slices) {
        new SliceTree(slices).merge(ranges(), 1); // refuses shards that are not subtrees covering the slices in order
        return this;
    }

    /** The shards' slices in order. */
    public List<SliceTree.Range> ranges() {
        return holders.stream().map(Holder::slices).toList();
    }

    /** This partition's shard. */
    public Holder own() {
        return holders.get(self);
    }

    /** Whether this partition holds only its slices (a shard of another worker's stage). */
    public boolean shardOnly() {
        return self > 0;
    }
}
