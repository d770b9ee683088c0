package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.worker.engine.cpu.NativeKernels;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A Llama-family stage computed by the native CPU kernels ({@link NativeKernels}) on weights as the shards hold them:
 * ggml blocks (Q8_0, Q4_0, Q4_K, Q6_K) or F32/F16/BF16 rows, read in place, never dequantized into memory of their
 * own. Norms, biases, activations and the KV caches are float32, in the engine's arrays like every stage's (the
 * executor's caches, budget and replay are the same); one native call runs all the stage's layers of a step.
 *
 * <p>The math is llama.py's (transformers' float32 Llama) on the weights' exact values. With {@link Activations#F32}
 * only the order of additions differs from a float32 product with the dequantized matrices, so logits agree with that
 * reference within float32 rounding; with {@link Activations#INT8} (the default) each quantized product's input is
 * first rounded to 8 bits a block of 32 at a time, as llama.cpp's kernels do (docs/models.md states both tolerances).
 * The kernels give a row the same bits whatever rows share its step ({@link #rowQuantum()} 1) and whatever CPU
 * computes it.
 */
final class NativeLlamaStage implements StageModel {

    /** Per layer, the matrices in the order of the kernels' slots (bfk_stage.c). */
    private static final String[] MATRICES = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
        "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
    private static final int ATTN_NORM = 0;
    private static final int FFN_NORM = 1;
    private static final int Q_BIAS = 2;

    /** A matrix of stored bytes and where they are. */
    /** A matrix's bytes, in ggml's layout or with its rows interleaved eight at a time (bfk_x8.c). */
    private record Matrix(GgmlType type, int rows, int cols, NDArray bytes, long address, boolean interleaved) {
    }

    private final NDManager manager;
    private final ModelConfig config;
    private final int numLayers;
    private final RotaryEmbedding rotary;
    private final long stage;
    private final long pool;
    private final Matrix embedding;
    private final Matrix head;
    private final long finalNorm;
    private final long weightBytes;
    private final String types;
    private final boolean int8Activations;

    private NativeLlamaStage(NDManager manager, ModelConfig config, int numLayers, long stage, long pool, Matrix embedding,
                             Matrix head, long finalNorm, long weightBytes, String types, boolean int8Activations) {
        this.manager = manager;
        this.config = config;
        this.numLayers = numLayers;
        this.rotary = new RotaryEmbedding(config.headDim(), config.ropeTheta(), config.ropeScaling());
        this.stage = stage;
        this.pool = pool;
        this.embedding = embedding;
        this.head = head;
        this.finalNorm = finalNorm;
        this.weightBytes = weightBytes;
        this.types = types;
        this.int8Activations = int8Activations;
    }

    /**
     * Loads the stage's tensors from {@code w} into {@code manager}'s memory.
     *
     * @param threads     the kernels' threads (0: one per core)
     * @param activations what the quantized matrices multiply
     * @throws IllegalArgumentException if the stage needs what the kernels do not compute (a type, a bias on a
     *                                  projection other than q, k, v, a width that is not a whole number of blocks)
     */
    static NativeLlamaStage load(PartitionSpec spec, WeightStore w, NDManager manager, int threads,
                                 Activations activations) {
        if (!NativeKernels.available()) {
            throw new IllegalStateException("the native CPU kernels are not available: " + NativeKernels.loadError().orElse(""));
        }
        ModelConfig c = spec.config();
        if (!computes(c)) {
            throw new IllegalArgumentException("the native kernels compute dense Llama-family layers without q/k norms;"
                    + " this model has " + (c.experts() != null ? c.experts().kind().modelType() + " experts" : "q/k norms")
                    + ": run it with butterfly.worker.kernels=auto or torch (libtorch's stage)");
        }
        long h = c.hiddenSize();
        long qDim = (long) c.numHeads() * c.headDim();
        long[] rows = {qDim, c.kvDim(), c.kvDim(), h, c.intermediateSize(), c.intermediateSize(), h};
        long[] cols = {h, h, h, qDim, h, h, c.intermediateSize()};
        Map<GgmlType, Long> bytesByType = new TreeMap<>();
        long stage = NativeKernels.stageCreate(c.hiddenSize(), c.numHeads(), c.numKvHeads(), c.intermediateSize(),
                spec.numLayers(), c.maxPositions(), (float) c.normEps());
        NativeKernels.stageSetQ8Activations(stage, activations == Activations.INT8);
        long pool = 0;
        try {
            long bytes = 0;
            for (int i = 0; i < spec.numLayers(); i++) {
                String p = "model.layers." + (spec.layerStart() + i) + ".";
                for (int m = 0; m < MATRICES.length; m++) {
                    Matrix matrix = matrix(w, p + MATRICES[m] + ".weight", rows[m], cols[m]);
                    if (activations == Activations.INT8) {
                        matrix = interleaved(matrix, w, manager);
                    }
                    NativeKernels.stageSetMatrix(stage, i, m, matrix.type().id(), matrix.rows(), matrix.cols(),
                            matrix.address(), matrix.interleaved());
                    bytesByType.merge(matrix.type(), matrix.bytes().size(), Long::sum);
                    bytes += matrix.bytes().size();
                    if (m >= 3 && w.has(p + MATRICES[m] + ".bias")) {
                        throw new IllegalArgumentException("the native kernels add no bias to " + MATRICES[m] + " (tensor "
                                + p + MATRICES[m] + ".bias)");
                    }
                }
                NativeKernels.stageSetVector(stage, i, ATTN_NORM, vector(w, p + "input_layernorm.weight", h));
                NativeKernels.stageSetVector(stage, i, FFN_NORM, vector(w, p + "post_attention_layernorm.weight", h));
                bytes += 2 * h * Float.BYTES;
                for (int b = 0; b < 3; b++) {
                    String bias = p + MATRICES[b] + ".bias";
                    if (w.has(bias)) {
                        NativeKernels.stageSetVector(stage, i, Q_BIAS + b, vector(w, bias, rows[b]));
                        bytes += rows[b] * Float.BYTES;
                    }
                }
            }
            String embedName = "model.embed_tokens.weight";
            Matrix embedding = spec.hasEmbedding() ? matrix(w, embedName, c.vocabSize(), h) : null;
            boolean tiedHead = spec.hasHead() && !w.has("lm_head.weight");
            if (embedding != null && tiedHead && activations == Activations.INT8) {
                embedding = interleaved(embedding, w, manager); // the head's products read it most
            }
            if (embedding != null) {
                bytes += embedding.bytes().size();
                bytesByType.merge(embedding.type(), embedding.bytes().size(), Long::sum);
            }
            Matrix head = null;
            long norm = 0;
            if (spec.hasHead()) {
                norm = vector(w, "model.norm.weight", h);
                head = tiedHead && embedding != null ? embedding : matrix(w, tiedHead ? embedName : "lm_head.weight",
                        c.vocabSize(), h);
                if (head != embedding && activations == Activations.INT8) {
                    head = interleaved(head, w, manager);
                }
                if (head != embedding) {
                    bytes += head.bytes().size();
                    bytesByType.merge(head.type(), head.bytes().size(), Long::sum);
                }
                bytes += h * Float.BYTES;
            }
            pool = NativeKernels.poolCreate(threads > 0 ? threads : Runtime.getRuntime().availableProcessors());
            List<String> names = new ArrayList<>();
            bytesByType.keySet().forEach(t -> names.add(t.name()));
            boolean int8 = activations == Activations.INT8 && bytesByType.keySet().stream().anyMatch(GgmlType::quantized);
            return new NativeLlamaStage(manager, c, spec.numLayers(), stage, pool, embedding, head, norm, bytes,
                    String.join("+", names), int8);
        } catch (RuntimeException e) {
            NativeKernels.stageDestroy(stage);
            if (pool != 0) {
                NativeKernels.poolDestroy(pool);
            }
            throw e;
        }
    }

    /** Whether the kernels compute a model of this config: not its experts or q/k norms. */
    static boolean computes(ModelConfig config) {
        return config.experts() == null && !config.qkNorm();
    }

    private static Matrix matrix(WeightStore w, String name, long rows, long cols) {
        GgmlType type = w.storedType(name);
        if (!type.supported()) {
            throw new IllegalArgumentException("tensor '" + name + "' is " + type + ", which the kernels do not compute");
        }
        if (cols % Math.max(type.blockSize(), 8) != 0) {
            throw new IllegalArgumentException("tensor '" + name + "' has rows of " + cols + " values; the kernels need a"
                    + " multiple of " + Math.max(type.blockSize(), 8));
        }
        NDArray bytes = w.loadBytes(name, rows, cols);
        return new Matrix(type, (int) rows, (int) cols, bytes, address(bytes), false);
    }

    /**
     * The matrix with its rows interleaved eight at a time where that layout applies (Q8_0, Q4_0, Q4_K, Q6_K: bfk_x8.c), which
     * the products with 8-bit activations read two to three times faster; the loaded bytes are let go. The same
     * values, in as many bytes.
     */
    private static Matrix interleaved(Matrix m, WeightStore w, NDManager manager) {
        NDArray copy = manager.create(m.bytes().getShape(), DataType.UINT8);
        if (!NativeKernels.interleave(m.type().id(), m.rows(), m.cols(), m.address(), address(copy))) {
            copy.close();
            return m;
        }
        w.releasePages(m.bytes());
        m.bytes().close();
        return new Matrix(m.type(), m.rows(), m.cols(), copy, address(copy), true);
    }

    private static long vector(WeightStore w, String name, long size) {
        return address(w.load(name, size));
    }

    /** The address of an array's memory (its arrays live in host memory). */
    static long address(NDArray array) {
        ByteBuffer memory = array.toByteBuffer(true);
        if (!memory.isDirect()) {
            throw new IllegalStateException("the engine gave a copy of an array's memory, not the memory");
        }
        return NativeKernels.address(memory);
    }

    @Override
    public NDArray embed(NDArray tokenIds, StepBatch step) {
        long[] ids = tokenIds.toLongArray();
        int[] rows = new int[ids.length];
        for (int i = 0; i < ids.length; i++) {
            rows[i] = Math.toIntExact(ids[i]); // the executor checked they are in the vocabulary
        }
        NDArray out = step.manager().create(new Shape(ids.length, config.hiddenSize()), DataType.FLOAT32);
        NativeKernels.dequantizeRows(embedding.type().id(), embedding.rows(), embedding.cols(), embedding.address(),
                embedding.interleaved(), rows, address(out));
        return out;
    }

    @Override
    public NDArray layers(NDArray hidden, StepBatch step) {
        return layers(hidden, step, null);
    }

    @Override
    public boolean layerProbes() {
        return true;
    }

    /**
     * With a probe, one native call per layer ({@code bfk_stage_forward_layers}: the same code per layer as one call
     * over all, so the same bits), the probe seeing each layer's output in place before the next layer reads it.
     */
    @Override
    public NDArray layers(NDArray hidden, StepBatch step, LayerProbe probe) {
        if (numLayers == 0) {
            return hidden;
        }
        NDArray x = hidden.duplicate();
        int rows = Math.toIntExact(x.getShape().get(0));
        long[] triples = step.sequences();
        NDArray[] caches = step.caches();
        int[] seqs = new int[4 * caches.length];
        long[] cacheAddresses = new long[caches.length];
        long perPosition = 2L * numLayers * config.numKvHeads() * config.headDim();
        for (int s = 0; s < caches.length; s++) {
            int row = (int) triples[3 * s];
            int n = (int) triples[3 * s + 1];
            int position = (int) triples[3 * s + 2];
            long[] shape = caches[s].getShape().getShape();
            int capacity = (int) shape[3];
            if (row + n > rows || position + n > capacity || caches[s].size() != perPosition * capacity) {
                throw new IllegalStateException("sequence " + s + " of the step does not fit its rows or cache");
            }
            seqs[4 * s] = row;
            seqs[4 * s + 1] = n;
            seqs[4 * s + 2] = position;
            seqs[4 * s + 3] = capacity;
            cacheAddresses[s] = address(caches[s]);
        }
        RotaryEmbedding.Tables rope = rotary.tables(step.manager(), step.positions());
        if (probe == null) {
            int rc = NativeKernels.stageForward(stage, pool, address(x), rows, seqs, cacheAddresses, address(rope.cos()),
                    address(rope.signedSin()));
            if (rc != 0) {
                throw new OutOfMemoryError("the native kernels found no memory for a step of " + rows + " rows");
            }
            return x;
        }
        ByteBuffer memory = x.toByteBuffer(true);
        int bytes = step.totalTokens() * config.hiddenSize() * Float.BYTES;
        for (int layer = 0; layer < numLayers; layer++) {
            int rc = NativeKernels.stageForward(stage, pool, address(x), rows, seqs, cacheAddresses, address(rope.cos()),
                    address(rope.signedSin()), layer, layer + 1);
            if (rc != 0) {
                throw new OutOfMemoryError("the native kernels found no memory for a step of " + rows + " rows");
            }
            probe.afterLayer(layer, memory.duplicate().order(java.nio.ByteOrder.LITTLE_ENDIAN).position(0).limit(bytes)
                    .slice().order(java.nio.ByteOrder.LITTLE_ENDIAN));
        }
        return x;
    }

    @Override
    public NDArray head(NDArray hidden, NDArray rows) {
        long[] wanted = rows.toLongArray();
        int h = config.hiddenSize();
        NDManager m = rows.getManager();
        NDArray selected = m.create(new Shape(wanted.length, h), DataType.FLOAT32);
        ByteBuffer from = hidden.toByteBuffer(true);
        ByteBuffer to = selected.toByteBuffer(true);
        for (int i = 0; i < wanted.length; i++) {
            int at = Math.toIntExact(wanted[i]) * h * Float.BYTES;
            to.put(i * h * Float.BYTES, from.duplicate().position(at).limit(at + h * Float.BYTES).slice(), 0, h * Float.BYTES);
        }
        long x = address(selected);
        NativeKernels.rmsNorm(x, finalNorm, wanted.length, h, (float) config.normEps(), x);
        NDArray logits = m.create(new Shape(wanted.length, head.rows()), DataType.FLOAT32);
        if (NativeKernels.product(pool, head.type().id(), head.rows(), head.cols(), head.address(), head.interleaved(), x,
                wanted.length, int8Activations, address(logits)) != 0) {
            throw new OutOfMemoryError("the native kernels found no memory for the head of " + wanted.length + " rows");
        }
        return logits;
    }

    @Override
    public void rest() {
        NativeKernels.poolRest(pool);
    }

    @Override
    public String projections() {
        return "native " + types + " (" + NativeKernels.instructionSet() + (int8Activations ? ", int8 activations" : "")
                + ")";
    }

    @Override
    public int rowQuantum() {
        return 1;
    }

    @Override
    public long weightBytes() {
        return weightBytes;
    }

    @Override
    public void close() {
        NativeKernels.stageDestroy(stage);
        NativeKernels.poolDestroy(pool);
        manager.close();
    }
}
