package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.pytorch.engine.PtNDArray;
import ai.djl.pytorch.jni.IValue;
import io.butterfly.common.model.MixtureOfExperts;
import io.butterfly.common.model.ModelConfig;

/**
 * Llama-family stage (Llama, Qwen2, Mistral, Qwen3 and the mixtures of experts Mixtral, Qwen2-MoE, Qwen3-MoE):
 * RMSNorm, rotary embeddings, grouped-query attention (with Qwen3's q/k norms) and a SiLU-gated MLP or a routed mixture
 * of them, computed by {@code torchscript/llama.py}. Projections sharing an input are fused at load time: one
 * {@code [q | k | v]} and one {@code [gate | up]} product per layer and expert.
 */
final class LlamaStage implements StageModel {

    private final NDManager manager;
    private final TorchScript script;
    private final ModelConfig config;
    private final RotaryEmbedding rotary;
    /**
     * Per layer, as llama.py reads them: input norm, q|k|v, o, post-attention norm, q and k norms if any, then gate|up
     * and down, or the router, each expert's gate|up and down, and the shared expert's gate|up, down and gate.
     */
    private final IValue layers;
    /** Per layer, where its weights start in {@link #layers} and its experts (0: dense). */
    private final IValue layout;
    private final int numLayers;
    private final IValue dims;
    /** llama.py's constants: attention scale, 1, norm epsilon, hidden size. */
    private final IValue constants;
    private final NDArray embedding;
    private final NDArray finalNorm;
    private final IValue head;
    private final long weightBytes;

    private LlamaStage(NDManager manager, TorchScript script, ModelConfig config, StageWeights layers, long[] layout,
                       int numLayers, NDArray embedding, NDArray finalNorm, StageWeights head, long weightBytes) {
        this.manager = manager;
        this.script = script;
        this.config = config;
        this.rotary = new RotaryEmbedding(config.headDim(), config.ropeTheta(), config.ropeScaling());
        this.layers = layers.toList();
        this.layout = IValue.listFrom(layout);
        this.numLayers = numLayers;
        MixtureOfExperts moe = config.experts();
        this.dims = IValue.listFrom(config.numHeads(), config.numKvHeads(), config.headDim(), config.intermediateSize(),
                config.qkNorm() ? 1 : 0, moe == null ? 0 : moe.perToken(), moe != null && moe.normalizeTopK() ? 1 : 0,
                moe != null && moe.hasSharedExpert() ? 1 : 0, script.linear().rowQuantum());
        this.constants = IValue.listFrom(scalar(manager, 1.0 / Math.sqrt(config.headDim())), scalar(manager, 1),
                scalar(manager, config.normEps()), scalar(manager, config.hiddenSize()), scalar(manager, config.headDim()));
        this.embedding = embedding;
        this.finalNorm = finalNorm;
        this.head = head == null ? null : head.toList();
        this.weightBytes = weightBytes;
    }

    static LlamaStage load(PartitionSpec spec, WeightStore w, NDManager manager, TorchScript script, WeightDtype dtype) {
        ModelConfig c = spec.config();
        long h = c.hiddenSize();
        long qDim = (long) c.numHeads() * c.headDim();
        long kvDim = c.kvDim();
        long inter = c.intermediateSize();
        MixtureOfExperts moe = c.experts();
        StageWeights layers = new StageWeights(script, manager, dtype).loadedFrom(w);
        long[] layout = new long[2 * spec.numLayers()];
        for (int i = spec.layerStart(); i < spec.layerEnd(); i++) {
            String p = "model.layers." + i + ".";
            String a = p + "self_attn.";
            String m = p + "mlp.";
            boolean sparse = moe != null && moe.sparse(i);
            layout[2 * (i - spec.layerStart())] = layers.size();
            layout[2 * (i - spec.layerStart()) + 1] = sparse ? moe.experts() : 0;
            layers.add(w.load(p + "input_layernorm.weight", h))
                    .addProjection(w.loadStacked(new String[]{a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"},
                                    new long[]{qDim, kvDim, kvDim}, h),
                            fusedBias(w, manager, new String[]{a + "q_proj.bias", a + "k_proj.bias", a + "v_proj.bias"},
                                    new long[]{qDim, kvDim, kvDim}))
                    .addProjection(w.load(a + "o_proj.weight", h, qDim), w.loadOptional(a + "o_proj.bias", h))
                    .add(w.load(p + "post_attention_layernorm.weight", h));
            if (c.qkNorm()) {
                layers.add(w.load(a + "q_norm.weight", c.headDim())).add(w.load(a + "k_norm.weight", c.headDim()));
            }
            if (!sparse) {
                layers.addProjection(w.loadStacked(new String[]{m + "gate_proj.weight", m + "up_proj.weight"}, new long[]{inter, inter}, h),
                                fusedBias(w, manager, new String[]{m + "gate_proj.bias", m + "up_proj.bias"}, new long[]{inter, inter}))
                        .addProjection(w.load(m + "down_proj.weight", h, inter), w.loadOptional(m + "down_proj.bias", h));
                continue;
            }
            layers.addProjection(w.load(moe.router(i), moe.experts(), h), null);
            for (int e = 0; e < moe.experts(); e++) {
                addMlp(layers, w, moe.expert(i, e), moe.expertSize(), h);
            }
            if (moe.hasSharedExpert()) {
                addMlp(layers, w, moe.sharedExpert(i), moe.sharedExpertSize(), h);
                layers.add(w.load(moe.sharedExpertGate(i), 1, h)); // as loaded: llama.py takes a dot product with it
            }
        }
        String embedName = "model.embed_tokens.weight";
        boolean tied = !w.has("lm_head.weight");
        NDArray embedding = spec.hasEmbedding() ? w.load(embedName, c.vocabSize(), h) : null;
        long bytes = layers.bytes() + (embedding == null ? 0 : embedding.size() * Float.BYTES);
        StageWeights head = null;
        NDArray norm = null;
        if (spec.hasHead()) {
            norm = w.load("model.norm.weight", h);
            head = new StageWeights(script, manager, dtype).loadedFrom(w);
            if (tied && embedding != null) {
                head.addSharedProjection(embedding, null);
            } else {
                head.addProjection(w.load(tied ? embedName : "lm_head.weight", c.vocabSize(), h), null);
            }
            bytes += head.bytes() + h * Float.BYTES;
        }
        return new LlamaStage(manager, script, c, layers, layout, spec.numLayers(), embedding, norm, head, bytes);
    }

    /** A SiLU-gated MLP without biases (an expert): gate|up fused, then down. */
    private static void addMlp(StageWeights layers, WeightStore w, String[] gateUpDown, long inter, long h) {
        layers.addProjection(w.loadStacked(new String[]{gateUpDown[0], gateUpDown[1]}, new long[]{inter, inter}, h), null)
                .addProjection(w.load(gateUpDown[2], h, inter), null);
    }

    /** The fused bias, zeros for parts without one, or null when no part has one. */
    private static NDArray fusedBias(WeightStore w, NDManager manager, String[] names, long[] sizes) {
        boolean any = false;
        for (String n : names) {
            any |= w.has(n);
        }
        if (!any) {
            return null;
        }
        NDArray[] parts = new NDArray[names.length];
        for (int i = 0; i < names.length; i++) {
            parts[i] = w.has(names[i]) ? w.load(names[i], sizes[i]) : manager.zeros(new Shape(sizes[i]));
        }
        try (NDList list = new NDList(parts)) {
            return NDArrays.concat(list, 0);
        }
    }

    /** A 0-dim float32 tensor. */
    static PtNDArray scalar(NDManager manager, double value) {
        return (PtNDArray) manager.create((float) value);
    }

    @Override
    public NDArray embed(NDArray tokenIds, StepBatch step) {
        try (ScriptArgs args = new ScriptArgs()) {
            return script.callForArray(step.manager(), "embed", args.tensor(embedding), args.tensor(tokenIds));
        }
    }

    @Override
    public NDArray layers(NDArray hidden, StepBatch step) {
        if (numLayers == 0) {
            return hidden;
        }
        RotaryEmbedding.Tables rope = rotary.tables(step.manager(), step.positions());
        try (ScriptArgs args = new ScriptArgs()) {
            return script.callForArray(step.manager(), "layers", args.tensor(hidden), layers, layout, dims, constants,
                    args.tensor(rope.cos()), args.tensor(rope.signedSin()), args.ints(step.sequences()),
                    args.tensors(step.caches()));
        }
    }

    @Override
    public NDArray head(NDArray hidden, NDArray rows) {
        try (ScriptArgs args = new ScriptArgs()) {
            return script.callForArray(rows.getManager(), "head", args.tensor(hidden), args.tensor(rows), args.tensor(finalNorm),
                    head, constants);
        }
    }

    @Override
    public String projections() {
        return script.linear().description();
    }

    @Override
    public int rowQuantum() {
        return script.linear().rowQuantum();
    }

    @Override
    public long weightBytes() {
        return weightBytes;
    }

    @Override
    public void close() {
        layers.close();
        layout.close();
        dims.close();
        constants.close();
        if (head != null) {
            head.close();
        }
        script.close();
        manager.close();
    }
}
