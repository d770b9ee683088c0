package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.tensor.HeadSlices;
import io.butterfly.common.tensor.SliceTree;
import io.butterfly.worker.engine.cpu.NativeKernels;

/**
 * A head shard's slices computed by the native kernels (bfk_stage.c's {@code bfk_stage_half}) instead of
 * TorchScript: each slice is a stage of its own (its query heads over one key/value head, its MLP columns) whose
 * halves are computed apart, without the residual, into a partial of its own, so a slice's partial has the same bits
 * on whichever worker and beside whichever slices it is computed, as {@link HeadShard} promises. One native call per
 * slice and half: no interpreter between the operations, no per-operation allocation. The caches are the shard's
 * ({@code [layers, 2, 1, capacity, headDim]} per sequence and slice, the kernels' layout for one key/value head).
 */
final class NativeHeadSlices implements AutoCloseable {

    private static final int ATTN_NORM = 0;
    private static final int FFN_NORM = 1;
    private static final int Q_BIAS = 2;

    private final ModelConfig config;
    private final NDManager manager;
    private final long[] stages;
    private final long pool;
    private final int layers;

    private NativeHeadSlices(ModelConfig config, NDManager manager, long[] stages, long pool, int layers) {
        this.config = config;
        this.manager = manager;
        this.stages = stages;
        this.pool = pool;
        this.layers = layers;
    }

    /**
     * Whether the kernels compute these slices: a dense Llama-family layer without q/k norms, every matrix's rows a
     * multiple of 8 values (the hidden size, a slice's query width and its MLP columns).
     */
    static boolean computes(ModelConfig c, SliceTree.Range slices) {
        if (!NativeKernels.available() || !NativeLlamaStage.computes(c) || c.hiddenSize() % 8 != 0) {
            return false;
        }
        HeadSlices cut = new HeadSlices(c.numHeads(), c.numKvHeads(), c.headDim(), c.intermediateSize());
        for (int s = slices.first(); s < slices.end(); s++) {
            int mlp = cut.mlpRows(s).size();
            if (cut.queryRows(s).size() % 8 != 0 || mlp == 0 || mlp % 8 != 0) {
                return false;
            }
        }
        return true;
    }

    /**
     * Stages for {@code slices} of {@code layers} layers, their weights set with {@link #set}.
     *
     * @param threads the kernels' threads (0: one per core)
     */
    static NativeHeadSlices create(ModelConfig c, SliceTree.Range slices, int layers, NDManager manager, int threads) {
        HeadSlices cut = new HeadSlices(c.numHeads(), c.numKvHeads(), c.headDim(), c.intermediateSize());
        long[] stages = new long[slices.size()];
        int group = c.numHeads() / c.numKvHeads();
        for (int s = 0; s < stages.length; s++) {
            stages[s] = NativeKernels.stageCreate(c.hiddenSize(), group, 1, cut.mlpRows(slices.first() + s).size(), layers,
                    c.maxPositions(), (float) c.normEps());
            NativeKernels.stageSetHeadDim(stages[s], c.headDim());
            NativeKernels.stageSetQ8Activations(stages[s], false);
        }
        long pool = NativeKernels.poolCreate(threads > 0 ? threads : Runtime.getRuntime().availableProcessors());
        return new NativeHeadSlices(c, manager, stages, pool, layers);
    }

    /**
     * Slice {@code slice}'s (of this shard, from 0) weights of the stage's layer {@code layer}: row-major float32,
     * {@code qkv} its q, k and v rows {@code [q + 2 kv, hidden]}, {@code o} its columns of o_proj {@code [hidden, q]},
     * {@code gateUp} its gate then up rows {@code [2 mlp, hidden]}, {@code down} its columns of down_proj
     * {@code [hidden, mlp]}; a bias null where the model has none.
     */
    void set(int slice, int layer, float[] qkv, float[] qkvBias, float[] o, float[] gateUp, float[] down, NDArray attnNorm,
             NDArray ffnNorm) {
        int h = config.hiddenSize();
        int q = (config.numHeads() / config.numKvHeads()) * config.headDim();
        int kv = config.headDim();
        int mlp = gateUp.length / (2 * h);
        long stage = stages[slice];
        long qkvAt = address(manager.create(qkv, new Shape(q + 2L * kv, h)));
        long row = (long) h * Float.BYTES;
        matrix(stage, layer, 0, q, h, qkvAt);
        matrix(stage, layer, 1, kv, h, qkvAt + q * row);
        matrix(stage, layer, 2, kv, h, qkvAt + (q + kv) * row);
        matrix(stage, layer, 3, h, q, address(manager.create(o, new Shape(h, q))));
        long gateUpAt = address(manager.create(gateUp, new Shape(2L * mlp, h)));
        matrix(stage, layer, 4, mlp, h, gateUpAt);
        matrix(stage, layer, 5, mlp, h, gateUpAt + mlp * row);
        matrix(stage, layer, 6, h, mlp, address(manager.create(down, new Shape(h, mlp))));
        NativeKernels.stageSetVector(stage, layer, ATTN_NORM, address(attnNorm));
        NativeKernels.stageSetVector(stage, layer, FFN_NORM, address(ffnNorm));
        if (qkvBias != null) {
            long biasAt = address(manager.create(qkvBias));
            NativeKernels.stageSetVector(stage, layer, Q_BIAS, biasAt);
            NativeKernels.stageSetVector(stage, layer, Q_BIAS + 1, biasAt + (long) q * Float.BYTES);
            NativeKernels.stageSetVector(stage, layer, Q_BIAS + 2, biasAt + (long) (q + kv) * Float.BYTES);
        }
    }

    private static void matrix(long stage, int layer, int slot, int rows, int cols, long address) {
        NativeKernels.stageSetMatrix(stage, layer, slot, GgmlType.F32.id(), rows, cols, address, false);
    }

    /**
     * Each slice's attention partial of the stage's layer {@code layer}: {@code [rows, hidden]} per slice.
     *
     * @param seqs   per sequence: first row, new tokens, position of the first, cache capacity
     * @param caches per sequence, per slice (sequence-major) its cache
     */
    float[][] attention(NDManager m, int layer, NDArray x, int rows, int[] seqs, NDArray[] caches,
                        RotaryEmbedding.Tables rope) {
        int n = seqs.length / 4;
        float[][] partials = new float[stages.length][];
        NDArray out = m.create(new Shape(rows, config.hiddenSize()), DataType.FLOAT32);
        long xAt = address(x);
        long outAt = address(out);
        long cos = address(rope.cos());
        long sin = address(rope.signedSin());
        for (int s = 0; s < stages.length; s++) {
            long[] own = new long[n];
            for (int i = 0; i < n; i++) {
                own[i] = address(caches[i * stages.length + s]);
            }
            check(NativeKernels.stageHalf(stages[s], pool, layer, false, xAt, rows, seqs, own, cos, sin, outAt), rows);
            partials[s] = out.toFloatArray();
        }
        return partials;
    }

    /** Each slice's MLP partial of the stage's layer {@code layer}: {@code [rows, hidden]} per slice. */
    float[][] mlp(NDManager m, int layer, NDArray x, int rows) {
        float[][] partials = new float[stages.length][];
        NDArray out = m.create(new Shape(rows, config.hiddenSize()), DataType.FLOAT32);
        long xAt = address(x);
        long outAt = address(out);
        for (int s = 0; s < stages.length; s++) {
            check(NativeKernels.stageHalf(stages[s], pool, layer, true, xAt, rows, new int[0], new long[0], 0, 0, outAt),
                    rows);
            partials[s] = out.toFloatArray();
        }
        return partials;
    }

    private void check(int rc, int rows) {
        if (rc != 0) {
            throw new OutOfMemoryError("the native kernels found no memory for a head shard's step of " + rows + " rows");
        }
    }

    /** The number of layers each slice's stage holds. */
    int layers() {
        return layers;
    }

    private static long address(NDArray array) {
        return NativeLlamaStage.address(array);
    }

    @Override
    public void close() {
        for (long s : stages) {
            NativeKernels.stageDestroy(s);
        }
        NativeKernels.poolDestroy(pool);
    }
}
