package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.jni.IValue;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.tensor.HeadSlices;
import io.butterfly.common.tensor.SliceTree;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * One worker's share of a head-parallel stage (docs/sharding.md, "Head parallelism"): for each of the stage's layers,
 * the slices {@code [first, end)} of {@link HeadSlices} (a subtree of the layer's {@link SliceTree}): their query heads
 * and key/value head, their columns of {@code o_proj}, their share of the MLP. Given the layer's input it answers its
 * slices' attention partials summed by its subtree ({@link #attention}); given the input after the merged attention,
 * its MLP partials summed the same way ({@link #mlp}). Each slice is computed apart, with its own KV cache per
 * sequence, so its partial has the same bits on whichever worker and beside whichever slices it is computed; the
 * caller merges the shards' sums with {@link SliceTree.Merge} and adds the residual. Dense Llama-family layers in
 * float32 without {@code o_proj} or {@code down_proj} bias (Llama, Qwen2, Qwen3, Mistral). All calls run on the
 * options' engine thread ({@link ExecutorOptions#engineThread}; the caller's when they name none), one at a time.
 */
public final class HeadShard implements AutoCloseable {

    private final ModelConfig config;
    private final int layerStart;
    private final int layerEnd;
    private final SliceTree tree;
    private final SliceTree.Range slices;
    private final NDManager root;
    private final NDManager weightsManager;
    private final TorchScript script;
    private final IValue weights;
    private final IValue dims;
    private final IValue constants;
    private final RotaryEmbedding rotary;
    /** Per layer of the stage, where its weights start in {@link #weights}. */
    private final int[] layerAt;
    /** Per sequence, per slice of this shard: {@code [layers, 2, 1, capacity, headDim]}. */
    private final Map<String, NDArray[]> caches = new HashMap<>();
    private final long weightBytes;
    /** Where every call computes (null: on the caller's thread); each holds this shard's monitor while it does. */
    private final EngineThread engineThread;
    /** The slices on the native kernels, or null: on TorchScript ({@code slice_attention}, {@code slice_mlp}). */
    private final NativeHeadSlices nativeSlices;

    private HeadShard(ModelConfig config, int layerStart, int layerEnd, SliceTree.Range slices, NDManager root,
                      NDManager weightsManager, TorchScript script, StageWeights weights, int[] layerAt,
                      EngineThread engineThread, NativeHeadSlices nativeSlices, long nativeBytes) {
        this.config = config;
        this.layerStart = layerStart;
        this.layerEnd = layerEnd;
        this.tree = new SliceTree(config.numKvHeads());
        this.slices = slices;
        this.root = root;
        this.weightsManager = weightsManager;
        this.script = script;
        this.weights = weights.toList();
        this.weightBytes = weights.bytes() + nativeBytes;
        this.layerAt = layerAt;
        this.dims = IValue.listFrom(config.numHeads(), config.numKvHeads(), config.headDim(), config.intermediateSize(),
                config.qkNorm() ? 1 : 0, 0, 0, 0, script.linear().rowQuantum());
        this.constants = IValue.listFrom(LlamaStage.scalar(weightsManager, 1.0 / Math.sqrt(config.headDim())),
                LlamaStage.scalar(weightsManager, 1), LlamaStage.scalar(weightsManager, config.normEps()),
                LlamaStage.scalar(weightsManager, config.hiddenSize()), LlamaStage.scalar(weightsManager, config.headDim()));
        this.rotary = new RotaryEmbedding(config.headDim(), config.ropeTheta(), config.ropeScaling());
        this.engineThread = engineThread;
        this.nativeSlices = nativeSlices;
    }

    /**
     * Loads slices {@code slices} of layers {@code [layerStart, layerEnd)} from safetensors files holding them (with
     * their Hugging Face names).
     *
     * @throws IllegalArgumentException the model is not a dense Llama-family one, or the slices are not a subtree
     */
    public static HeadShard load(ModelConfig config, int layerStart, int layerEnd, SliceTree.Range slices,
                                 List<Path> files, ExecutorOptions options) throws IOException {
        check(config, layerStart, layerEnd, slices);
        List<SafetensorsFile> opened = new ArrayList<>();
        try {
            for (Path p : files) {
                opened.add(SafetensorsFile.open(p));
            }
        } catch (IOException | RuntimeException e) {
            SafetensorsFile.closeAll(opened, e);
            throw e;
        }
        return loadOpened(config, layerStart, layerEnd, slices, opened, options);
    }

    /**
     * {@link #load} from safetensors files already open (e.g. through the channels their checksums were verified
     * through). Closes them, whether the load succeeds or fails.
     */
    public static HeadShard loadOpened(ModelConfig config, int layerStart, int layerEnd, SliceTree.Range slices,
                                       List<SafetensorsFile> opened, ExecutorOptions options) throws IOException {
        try {
            check(config, layerStart, layerEnd, slices);
        } catch (RuntimeException e) {
            SafetensorsFile.closeAll(opened, e);
            throw e;
        }
        return EngineThread.on(options.engineThread(),
                () -> loadOnEngineThread(config, layerStart, layerEnd, slices, opened, options));
    }

    private static void check(ModelConfig config, int layerStart, int layerEnd, SliceTree.Range slices) {
        Objects.requireNonNull(config, "config");
        if (config.experts() != null || config.architecture() == io.butterfly.common.model.Architecture.GPT2) {
            throw new IllegalArgumentException("head parallelism computes dense Llama-family layers, not "
                    + config.architecture() + (config.experts() != null ? " with experts" : ""));
        }
        if (layerStart < 0 || layerEnd > config.numLayers() || layerStart >= layerEnd) {
            throw new IllegalArgumentException("layer range [" + layerStart + ", " + layerEnd + ") of a model of "
                    + config.numLayers() + " layers");
        }
        if (!new SliceTree(config.numKvHeads()).isSubtree(slices)) {
            throw new IllegalArgumentException("slices " + slices + " are not a subtree of the tree over "
                    + config.numKvHeads() + " key/value heads");
        }
    }

    private static HeadShard loadOnEngineThread(ModelConfig c, int layerStart, int layerEnd, SliceTree.Range range,
                                                List<SafetensorsFile> opened, ExecutorOptions options) throws IOException {
        NDManager root = EngineSetup.rootManager(options, opened);
        NativeHeadSlices kernels = null;
        try {
            NDManager m = root.newSubManager();
            TorchScript script = TorchScript.compileForCpu(m, "LlamaStage", "llama.py", false);
            HeadSlices cut = new HeadSlices(c.numHeads(), c.numKvHeads(), c.headDim(), c.intermediateSize());
            int h = c.hiddenSize();
            int qDim = c.numHeads() * c.headDim();
            int kvDim = c.kvDim();
            int inter = c.intermediateSize();
            StageWeights weights = new StageWeights(script, m, WeightDtype.F32);
            int[] layerAt = new int[layerEnd - layerStart];
            boolean onKernels = options.kernels() != CpuKernels.TORCH && !options.device().startsWith("gpu")
                    && NativeHeadSlices.computes(c, range);
            kernels = onKernels ? NativeHeadSlices.create(c, range, layerEnd - layerStart, m,
                    options.threads()) : null;
            long kernelBytes = 0;
            try (WeightStore w = WeightStore.open(opened, m)) {
                for (int i = layerStart; i < layerEnd; i++) {
                    String p = "model.layers." + i + ".";
                    String a = p + "self_attn.";
                    String mlp = p + "mlp.";
                    for (String bias : new String[]{a + "o_proj.bias", mlp + "down_proj.bias"}) {
                        if (w.has(bias)) {
                            throw new IllegalArgumentException("head parallelism does not split " + bias);
                        }
                    }
                    layerAt[i - layerStart] = weights.size();
                    NDArray attnNorm = w.load(p + "input_layernorm.weight", h);
                    NDArray ffnNorm = w.load(p + "post_attention_layernorm.weight", h);
                    weights.add(attnNorm).add(ffnNorm);
                    if (c.qkNorm()) {
                        weights.add(w.load(a + "q_norm.weight", c.headDim())).add(w.load(a + "k_norm.weight", c.headDim()));
                    }
                    float[] q = floats(w, a + "q_proj.weight", qDim, h);
                    float[] k = floats(w, a + "k_proj.weight", kvDim, h);
                    float[] v = floats(w, a + "v_proj.weight", kvDim, h);
                    float[] qb = w.has(a + "q_proj.bias") ? floats(w, a + "q_proj.bias", qDim) : null;
                    float[] kb = w.has(a + "k_proj.bias") ? floats(w, a + "k_proj.bias", kvDim) : null;
                    float[] vb = w.has(a + "v_proj.bias") ? floats(w, a + "v_proj.bias", kvDim) : null;
                    float[] o = floats(w, a + "o_proj.weight", h, qDim);
                    float[] gate = floats(w, mlp + "gate_proj.weight", inter, h);
                    float[] up = floats(w, mlp + "up_proj.weight", inter, h);
                    float[] down = floats(w, mlp + "down_proj.weight", h, inter);
                    for (int s = range.first(); s < range.end(); s++) {
                        SliceTree.Range qr = cut.queryRows(s);
                        SliceTree.Range kr = cut.keyRows(s);
                        SliceTree.Range mr = cut.mlpRows(s);
                        float[] qkv = concat(rows(q, h, qr), rows(k, h, kr), rows(v, h, kr));
                        if (kernels != null) {
                            float[] qkvBias = qb == null && kb == null && vb == null ? null : concat(
                                    qb == null ? new float[qr.size()] : rows(qb, 1, qr),
                                    kb == null ? new float[kr.size()] : rows(kb, 1, kr),
                                    vb == null ? new float[kr.size()] : rows(vb, 1, kr));
                            float[] gateUp = concat(rows(gate, h, mr), rows(up, h, mr));
                            kernels.set(s - range.first(), i - layerStart, qkv, qkvBias, columns(o, qDim, qr), gateUp,
                                    columns(down, inter, mr), attnNorm, ffnNorm);
                            kernelBytes += (long) Float.BYTES * (qkv.length + 2L * h * qr.size() + gateUp.length
                                    + (long) h * mr.size() + (qkvBias == null ? 0 : qkvBias.length));
                            continue;
                        }
                        NDArray bias = qb == null && kb == null && vb == null ? null : m.create(concat(
                                qb == null ? new float[qr.size()] : rows(qb, 1, qr),
                                kb == null ? new float[kr.size()] : rows(kb, 1, kr),
                                vb == null ? new float[kr.size()] : rows(vb, 1, kr)));
                        weights.addProjection(m.create(qkv, new Shape(qr.size() + 2L * kr.size(), h)), bias)
                                .addProjection(m.create(columns(o, qDim, qr), new Shape(h, qr.size())), null)
                                .addProjection(m.create(concat(rows(gate, h, mr), rows(up, h, mr)),
                                        new Shape(2L * mr.size(), h)), null)
                                .addProjection(m.create(columns(down, inter, mr), new Shape(h, mr.size())), null);
                    }
                }
            }
            return new HeadShard(c, layerStart, layerEnd, range, root, m, script, weights, layerAt, options.engineThread(),
                    kernels, kernelBytes);
        } catch (IOException | RuntimeException e) {
            if (kernels != null) {
                kernels.close();
            }
            root.close();
            throw e;
        }
    }

    private static float[] floats(WeightStore w, String name, long... shape) {
        try (NDArray a = w.load(name, shape)) {
            return a.toFloatArray();
        }
    }

    /** Rows {@code [first, end)} of a row-major matrix of {@code width} columns. */
    private static float[] rows(float[] matrix, int width, SliceTree.Range r) {
        float[] out = new float[r.size() * width];
        System.arraycopy(matrix, r.first() * width, out, 0, out.length);
        return out;
    }

    /** Columns {@code [first, end)} of a row-major matrix of {@code width} columns. */
    private static float[] columns(float[] matrix, int width, SliceTree.Range r) {
        int rows = matrix.length / width;
        float[] out = new float[rows * r.size()];
        for (int i = 0; i < rows; i++) {
            System.arraycopy(matrix, i * width + r.first(), out, i * r.size(), r.size());
        }
        return out;
    }

    private static float[] concat(float[]... parts) {
        int n = 0;
        for (float[] p : parts) {
            n += p.length;
        }
        float[] out = new float[n];
        int at = 0;
        for (float[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    /** The slices this shard holds: a subtree of the layer's slice tree. */
    public SliceTree.Range slices() {
        return slices;
    }

    /** Whether its slices are computed by the native kernels ({@link NativeHeadSlices}) rather than TorchScript. */
    public boolean onNativeKernels() {
        return nativeSlices != null;
    }

    /** Bytes of the weights this shard holds. */
    public long weightBytes() {
        return weightBytes;
    }

    /**
     * Its slices' attention partials of model layer {@code layer}, summed by its subtree: {@code [rows, hidden]}.
     * Writes the step's keys and values into its slices' caches.
     *
     * @param batch the step's sequences in row order (each chunk's tokens are consecutive rows of {@code x})
     * @param x     the layer's input {@code [rows, hidden]}
     */
    public float[] attention(int layer, List<SequenceChunk> batch, float[] x) {
        int l = local(layer);
        int rows = rowsOf(x);
        int tokens = batch.stream().mapToInt(SequenceChunk::numTokens).sum();
        if (tokens != rows) {
            throw new IllegalArgumentException("the batch has " + tokens + " tokens, the input " + rows + " rows");
        }
        long[] positions = new long[rows];
        long[] sequences = new long[3 * batch.size()];
        int offset = 0;
        for (int i = 0; i < batch.size(); i++) {
            SequenceChunk c = batch.get(i);
            for (int t = 0; t < c.numTokens(); t++) {
                positions[offset + t] = c.position() + t;
            }
            sequences[3 * i] = offset;
            sequences[3 * i + 1] = c.numTokens();
            sequences[3 * i + 2] = c.position();
            offset += c.numTokens();
        }
        return compute(() -> {
            try (NDManager m = root.newSubManager()) {
                List<NDArray> own = new ArrayList<>();
                for (SequenceChunk c : batch) {
                    for (NDArray slice : cacheFor(c.sequenceId(), c.position() + c.numTokens())) {
                        own.add(slice);
                    }
                }
                RotaryEmbedding.Tables rope = rotary.tables(m, positions);
                if (nativeSlices != null) {
                    int[] seqs = new int[4 * batch.size()];
                    for (int i = 0; i < batch.size(); i++) {
                        seqs[4 * i] = (int) sequences[3 * i];
                        seqs[4 * i + 1] = (int) sequences[3 * i + 1];
                        seqs[4 * i + 2] = (int) sequences[3 * i + 2];
                        seqs[4 * i + 3] = Math.toIntExact(own.get(i * slices.size()).getShape().get(3));
                    }
                    float[][] values = nativeSlices.attention(m, l, m.create(x, new Shape(rows, config.hiddenSize())),
                            rows, seqs, own.toArray(NDArray[]::new), rope);
                    return tree.sum(slices, s -> values[s - slices.first()]);
                }
                NDArray[] partials;
                try (ScriptArgs args = new ScriptArgs()) {
                    partials = script.callForArrays(m, "slice_attention", args.tensor(m.create(x, new Shape(rows,
                                    config.hiddenSize()))), weights, args.integer(layerAt[l]), args.integer(slices.size()),
                            dims, constants, args.tensor(rope.cos()), args.tensor(rope.signedSin()), args.ints(sequences),
                            args.tensors(own.toArray(NDArray[]::new)), args.integer(l));
                }
                return sum(partials);
            }
        });
    }

    /**
     * Its slices' MLP partials of model layer {@code layer}, summed by its subtree: {@code [rows, hidden]}.
     *
     * @param x the layer's input plus its merged attention {@code [rows, hidden]}
     */
    public float[] mlp(int layer, float[] x) {
        int l = local(layer);
        int rows = rowsOf(x);
        return compute(() -> {
            if (nativeSlices != null) {
                try (NDManager m = root.newSubManager()) {
                    float[][] values = nativeSlices.mlp(m, l, m.create(x, new Shape(rows, config.hiddenSize())), rows);
                    return tree.sum(slices, s -> values[s - slices.first()]);
                }
            }
            try (NDManager m = root.newSubManager(); ScriptArgs args = new ScriptArgs()) {
                return sum(script.callForArrays(m, "slice_mlp", args.tensor(m.create(x, new Shape(rows,
                                config.hiddenSize()))), weights, args.integer(layerAt[l]), args.integer(slices.size()), dims,
                        constants));
            }
        });
    }

    /** Sequences whose caches this shard holds. */
    public int cachedSequences() {
        return compute(caches::size);
    }

    /** Frees a sequence's caches (it ended, or is to be computed again from its start). */
    public void release(String sequenceId) {
        compute(() -> {
            NDArray[] own = caches.remove(sequenceId);
            if (own != null) {
                for (NDArray a : own) {
                    a.close();
                }
            }
            return null;
        });
    }

    /**
     * Queues {@code work} for the shard's engine thread and returns at once (runs it on the caller's thread if the
     * shard has none); the shard's calls made from it run there directly.
     */
    public void later(Runnable work) {
        if (engineThread == null) {
            work.run();
        } else {
            engineThread.execute(work);
        }
    }

    /** {@code work} on the engine thread (or the caller's), holding this shard's monitor there. */
    private <T> T compute(EngineThread.EngineWork<T, RuntimeException> work) {
        return EngineThread.on(engineThread, () -> {
            synchronized (this) {
                return work.run();
            }
        });
    }

    private float[] sum(NDArray[] partials) {
        float[][] values = new float[partials.length][];
        for (int i = 0; i < partials.length; i++) {
            values[i] = partials[i].toFloatArray();
        }
        return tree.sum(slices, s -> values[s - slices.first()]);
    }

    /** The sequence's caches with room for {@code positions}, grown (by doubling) when they have less. */
    private NDArray[] cacheFor(String sequence, int positions) {
        if (positions > config.maxPositions()) {
            throw new IllegalArgumentException("position " + positions + " past the model's " + config.maxPositions());
        }
        NDArray[] own = caches.get(sequence);
        long capacity = own == null ? 0 : own[0].getShape().get(3);
        if (capacity >= positions) {
            return own;
        }
        long grown = Math.min(config.maxPositions(), Math.max(positions, Math.max(16, 2 * capacity)));
        NDArray[] bigger = new NDArray[slices.size()];
        for (int s = 0; s < bigger.length; s++) {
            bigger[s] = weightsManager.zeros(new Shape(layerEnd - layerStart, 2, 1, grown, config.headDim()));
            if (own != null) {
                bigger[s].set(new NDIndex(":, :, :, 0:" + capacity), own[s]);
                own[s].close();
            }
        }
        caches.put(sequence, bigger);
        return bigger;
    }

    private int local(int layer) {
        if (layer < layerStart || layer >= layerEnd) {
            throw new IllegalArgumentException("layer " + layer + " is not in this shard's [" + layerStart + ", "
                    + layerEnd + ")");
        }
        return layer - layerStart;
    }

    private int rowsOf(float[] x) {
        if (x.length == 0 || x.length % config.hiddenSize() != 0) {
            throw new IllegalArgumentException(x.length + " values are not rows of " + config.hiddenSize());
        }
        return x.length / config.hiddenSize();
    }

    @Override
    public void close() {
        compute(() -> {
            caches.values().forEach(own -> {
                for (NDArray a : own) {
                    a.close();
                }
            });
            caches.clear();
            if (nativeSlices != null) {
                nativeSlices.close();
            }
            weights.close();
            dims.close();
            constants.close();
            script.close();
            root.close();
            return null;
        });
    }
}
