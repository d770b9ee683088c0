package io.butterfly.worker.engine;

import io.butterfly.common.safetensors.SafetensorsFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * A stage whose layers are split by heads over workers (docs/sharding.md, "Head parallelism"), on the stage's own
 * worker (shard 0): the embedding (first stage) and the head (last stage) as stages of no layers, and between them
 * {@link HeadParallelLayers} asking this worker's {@link HeadShard} and the other shards' workers ({@link RemoteHeads})
 * for their partials of each layer's halves, merged by the slice tree. Positions, replays and logits are the
 * embedding's and head's stages' (a stage with neither takes its hidden states as given). Sequences released here are
 * released on the other shards with the next call to them.
 */
public final class HeadParallelStage implements PartitionExecutor {

    /** A shard that does not answer a layer's half within this fails the step (retried by the coordinator). */
    static final Duration SHARD_TIMEOUT = Duration.ofSeconds(30);

    /**
     * How long the stage's thread gives up its core after asking the other shards, before it computes its own part:
     * long enough for a transport thread to write the requests (50-300 us measured, docs/sharding.md).
     */
    static final long HAND_OFF_NANOS = 100_000L;

    private final PartitionSpec spec;
    private final HeadPlacement placement;
    private final DjlPartitionExecutor embedding;
    private final DjlPartitionExecutor head;
    private final HeadShard own;
    private final RemoteHeads remote;
    private final HeadParallelLayers layers;
    /** Per other shard, the sequences released since its last attention call. */
    private final List<Set<String>> toRelease = new ArrayList<>();

    private HeadParallelStage(PartitionSpec spec, HeadPlacement placement, DjlPartitionExecutor embedding,
                              DjlPartitionExecutor head, HeadShard own, RemoteHeads remote) {
        this.spec = spec;
        this.placement = placement;
        this.embedding = embedding;
        this.head = head;
        this.own = own;
        this.remote = remote;
        for (int i = 0; i < placement.holders().size(); i++) {
            toRelease.add(new LinkedHashSet<>());
        }
        this.layers = new HeadParallelLayers(spec.config(), spec.layerStart(), spec.layerEnd(), placement.ranges(),
                new Exchange(), SHARD_TIMEOUT);
    }

    /**
     * Loads the stage's embedding and head (if it has them) and this worker's shard; {@code files} opens the stage's
     * weight files afresh for each of them.
     */
    public static HeadParallelStage load(PartitionSpec spec, HeadPlacement placement, FileOpener files,
                                         ExecutorOptions options, RemoteHeads remote) throws IOException {
        if (placement.shardOnly()) {
            throw new IllegalArgumentException("shard " + placement.self() + " holds only its slices: no stage");
        }
        if (remote == null) {
            throw new IllegalArgumentException("a head-parallel stage needs a way to ask its other shards");
        }
        placement.over(spec.config().numKvHeads());
        List<AutoCloseable> loaded = new ArrayList<>();
        try {
            DjlPartitionExecutor embedding = !spec.hasEmbedding() ? null : add(loaded, DjlPartitionExecutor.loadOpened(
                    new PartitionSpec(spec.config(), spec.layerStart(), spec.layerStart(), true, false), files.open(), options));
            HeadShard own = add(loaded, HeadShard.loadOpened(spec.config(), spec.layerStart(), spec.layerEnd(),
                    placement.own().slices(), files.open(), options));
            DjlPartitionExecutor head = !spec.hasHead() ? null : add(loaded, DjlPartitionExecutor.loadOpened(
                    new PartitionSpec(spec.config(), spec.layerEnd(), spec.layerEnd(), false, true), files.open(), options));
            return new HeadParallelStage(spec, placement, embedding, head, own, remote);
        } catch (IOException | RuntimeException e) {
            for (AutoCloseable c : loaded) {
                try {
                    c.close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /** Opens a stage's weight files (each call a fresh set: a load closes the files it is given). */
    public interface FileOpener {
        List<SafetensorsFile> open() throws IOException;
    }

    private static <T extends AutoCloseable> T add(List<AutoCloseable> loaded, T c) {
        loaded.add(c);
        return c;
    }

    @Override
    public PartitionSpec spec() {
        return spec;
    }

    /** Where the stage's shards are. */
    public HeadPlacement placement() {
        return placement;
    }

    @Override
    public StageResult forward(List<SequenceChunk> batch, StageInput input) {
        float[] x;
        if (embedding != null) {
            x = embedding.forward(batch, input).toFloats();
        } else if (input instanceof StageInput.Hidden hidden) {
            x = new float[hidden.littleEndianFloats().remaining() / Float.BYTES];
            hidden.littleEndianFloats().duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(x);
        } else {
            throw new IllegalArgumentException("a stage without the embedding takes hidden states, not token ids");
        }
        float[] out = layers.forward(batch, x);
        ByteBuffer hidden = ByteBuffer.allocate(out.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        hidden.asFloatBuffer().put(out);
        if (head != null) {
            return head.forward(batch, new StageInput.Hidden(hidden));
        }
        return new StageResult(hidden, new long[]{out.length / spec.config().hiddenSize(), spec.config().hiddenSize()},
                false);
    }

    @Override
    public void release(String sequenceId) {
        if (embedding != null) {
            embedding.release(sequenceId);
        }
        if (head != null) {
            head.release(sequenceId);
        }
        own.release(sequenceId);
        synchronized (toRelease) {
            for (int i = 1; i < toRelease.size(); i++) {
                toRelease.get(i).add(sequenceId);
            }
        }
    }

    @Override
    public List<String> evictIdle(long idleNanos) {
        DjlPartitionExecutor tracked = embedding != null ? embedding : head;
        List<String> evicted = tracked == null ? List.of() : tracked.evictIdle(idleNanos);
        evicted.forEach(this::release);
        return evicted;
    }

    @Override
    public int cachedSequences() {
        return own.cachedSequences();
    }

    @Override
    public long cachedBytes() {
        return 0; // the shards' caches are not counted against a budget (docs/sharding.md)
    }

    @Override
    public String projections() {
        return (own.onNativeKernels() ? "native float32" : "libtorch float32") + ", heads over "
                + placement.holders().size() + " shards";
    }

    @Override
    public long weightBytes() {
        return own.weightBytes() + (embedding == null ? 0 : embedding.weightBytes())
                + (head == null ? 0 : head.weightBytes());
    }

    @Override
    public long answeredTokens() {
        return embedding == null ? 0 : embedding.answeredTokens();
    }

    @Override
    public void close() {
        own.close();
        if (embedding != null) {
            embedding.close();
        }
        if (head != null) {
            head.close();
        }
    }

    /** Shard 0 computed here (after the others are asked), the others asked remotely. */
    private final class Exchange implements HeadExchange {

        @Override
        public CompletableFuture<float[]> attention(int shard, int layer, List<SequenceChunk> batch, float[] x) {
            if (shard == 0) {
                letTheRequestsLeave();
                return here(() -> own.attention(layer, batch, x));
            }
            List<String> released;
            synchronized (toRelease) {
                released = List.copyOf(toRelease.get(shard));
                toRelease.get(shard).clear();
            }
            return remote.attention(placement.holders().get(shard), layer, batch, rows(x), x, released)
                    .whenComplete((r, e) -> {
                        if (e != null && !released.isEmpty()) { // not heard: tell it again next time
                            synchronized (toRelease) {
                                toRelease.get(shard).addAll(released);
                            }
                        }
                    });
        }

        @Override
        public CompletableFuture<float[]> mlp(int shard, int layer, float[] x) {
            if (shard == 0) {
                letTheRequestsLeave();
                return here(() -> own.mlp(layer, x));
            }
            return remote.mlp(placement.holders().get(shard), layer, rows(x), x);
        }

        /*
         * The other shards were just asked (HeadParallelLayers asks shard 0 last); their requests are written by a
         * transport thread. Where this worker has one core, that thread waited for this one's time slice to end, so
         * the requests left only once this shard's own part was computed and the shards computed one after the
         * other (docs/sharding.md). Giving up the core for a moment lets it write them first. With more cores the
         * transport thread runs beside this one.
         */
        private void letTheRequestsLeave() {
            if (placement.holders().size() > 1 && Runtime.getRuntime().availableProcessors() == 1) {
                java.util.concurrent.locks.LockSupport.parkNanos(HAND_OFF_NANOS);
            }
        }

        private int rows(float[] x) {
            return x.length / spec.config().hiddenSize();
        }

        /*
         * On the calling thread: a step runs on the engine thread, and the shard's TorchScript runs there too, so a
         * thread of its own would wait for the engine thread while the engine thread waits for it.
         */
        private CompletableFuture<float[]> here(Supplier<float[]> work) {
            try {
                return CompletableFuture.completedFuture(work.get());
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
        }
    }
}
