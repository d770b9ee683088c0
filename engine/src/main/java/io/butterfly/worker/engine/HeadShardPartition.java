package io.butterfly.worker.engine;

import io.butterfly.common.safetensors.SafetensorsFile;
import java.io.IOException;
import java.util.List;

/**
 * A worker holding one head shard of another worker's stage (docs/sharding.md, "Head parallelism"): it runs no
 * sequence itself, and answers the stage's worker with its slices' partials ({@link #shard}).
 */
public final class HeadShardPartition implements PartitionExecutor {

    private final PartitionSpec spec;
    private final HeadPlacement placement;
    private final HeadShard shard;

    private HeadShardPartition(PartitionSpec spec, HeadPlacement placement, HeadShard shard) {
        this.spec = spec;
        this.placement = placement;
        this.shard = shard;
    }

    /** Loads this worker's slices of the stage's layers from the stage's weight files (closed whatever happens). */
    public static HeadShardPartition load(PartitionSpec spec, HeadPlacement placement, List<SafetensorsFile> files,
                                          ExecutorOptions options) throws IOException {
        if (!placement.shardOnly() || spec.hasEmbedding() || spec.hasHead()) {
            IllegalArgumentException e = new IllegalArgumentException(
                    "a head shard of another worker's stage holds no embedding or head");
            SafetensorsFile.closeAll(files, e);
            throw e;
        }
        try {
            placement.over(spec.config().numKvHeads());
        } catch (RuntimeException e) {
            SafetensorsFile.closeAll(files, e);
            throw e;
        }
        return new HeadShardPartition(spec, placement, HeadShard.loadOpened(spec.config(), spec.layerStart(),
                spec.layerEnd(), placement.own().slices(), files, options));
    }

    /** The slices this worker computes. */
    public HeadShard shard() {
        return shard;
    }

    public HeadPlacement placement() {
        return placement;
    }

    @Override
    public PartitionSpec spec() {
        return spec;
    }

    @Override
    public StageResult forward(List<SequenceChunk> batch, StageInput input) {
        throw new SequenceConflictException("this worker holds a head shard of another worker's stage, not a stage");
    }

    @Override
    public void release(String sequenceId) {
        shard.release(sequenceId);
    }

    @Override
    public List<String> evictIdle(long idleNanos) {
        return List.of(); // the stage's worker releases what it evicts
    }

    @Override
    public int cachedSequences() {
        return shard.cachedSequences();
    }

    @Override
    public long cachedBytes() {
        return 0;
    }

    @Override
    public String projections() {
        return (shard.onNativeKernels() ? "native float32" : "libtorch float32") + ", head slices "
                + placement.own().slices();
    }

    @Override
    public long weightBytes() {
        return shard.weightBytes();
    }

    @Override
    public long answeredTokens() {
        return 0;
    }

    @Override
    public void close() {
        shard.close();
    }
}
