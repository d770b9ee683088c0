package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.model.ModelConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * Llama-family stage (Llama, Qwen2, Mistral): RMSNorm, rotary embeddings, grouped-query attention and
 * a SiLU-gated MLP. Projections sharing an input are fused at load time: one {@code [q | k | v]} and one
 * {@code [gate | up]} matmul per layer ({@code [in, out]}, see {@link Projection}).
 */
final class LlamaStage implements StageModel {

    /** One decoder layer's weights. */
    record Layer(NDArray inputNorm, Projection qkv, Projection o, NDArray postNorm, Projection gateUp, Projection down) {
    }

    private final NDManager manager;
    private final ModelConfig config;
    private final Ops.Scalars scalars;
    private final RotaryEmbedding rotary;
    private final List<Layer> layers;
    private final TokenEmbedding embedding;
    private final NDArray finalNorm;
    private final Projection lmHead;

    private LlamaStage(NDManager manager, ModelConfig config, List<Layer> layers, TokenEmbedding embedding,
                       NDArray finalNorm, Projection lmHead) {
        this.manager = manager;
        this.config = config;
        this.scalars = Ops.Scalars.create(manager, config.normEps(), config.headDim());
        this.rotary = new RotaryEmbedding(config.headDim(), config.ropeTheta(), config.ropeScaling());
        this.layers = layers;
        this.embedding = embedding;
        this.finalNorm = finalNorm;
        this.lmHead = lmHead;
    }

    static LlamaStage load(PartitionSpec spec, WeightStore w, NDManager manager) {
        ModelConfig c = spec.config();
        long h = c.hiddenSize();
        long qDim = (long) c.numHeads() * c.headDim();
        long kvDim = c.kvDim();
        long inter = c.intermediateSize();
        List<Layer> layers = new ArrayList<>();
        for (int i = spec.layerStart(); i < spec.layerEnd(); i++) {
            String p = "model.layers." + i + ".";
            String a = p + "self_attn.";
            String m = p + "mlp.";
            layers.add(new Layer(
                    w.load(p + "input_layernorm.weight", h),
                    Projection.ofInOut(w.loadTransposedStacked(
                                    new String[]{a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"},
                                    new long[]{qDim, kvDim, kvDim}, h),
                            fusedBias(w, manager, new String[]{a + "q_proj.bias", a + "k_proj.bias", a + "v_proj.bias"},
                                    new long[]{qDim, kvDim, kvDim})),
                    Projection.load(w, a + "o_proj.weight", qDim, h, false, w.loadOptional(a + "o_proj.bias", h)),
                    w.load(p + "post_attention_layernorm.weight", h),
                    Projection.ofInOut(w.loadTransposedStacked(
                                    new String[]{m + "gate_proj.weight", m + "up_proj.weight"}, new long[]{inter, inter}, h),
                            fusedBias(w, manager, new String[]{m + "gate_proj.bias", m + "up_proj.bias"}, new long[]{inter, inter})),
                    Projection.load(w, m + "down_proj.weight", inter, h, false, w.loadOptional(m + "down_proj.bias", h))));
        }
        String embedName = "model.embed_tokens.weight";
        boolean tied = !w.has("lm_head.weight");
        Projection head = null;
        NDArray norm = null;
        if (spec.hasHead()) {
            norm = w.load("model.norm.weight", h);
            head = Projection.load(w, tied ? embedName : "lm_head.weight", h, c.vocabSize(), false, null);
        }
        TokenEmbedding embedding = null;
        if (spec.hasEmbedding()) {
            embedding = tied && head != null && head.inOut() != null
                    ? TokenEmbedding.columnsOf(head.inOut())
                    : TokenEmbedding.rowsOf(w.load(embedName, c.vocabSize(), h));
        }
        return new LlamaStage(manager, c, layers, embedding, norm, head);
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

    @Override
    public NDArray embed(NDArray tokenIds, StepBatch step) {
        return embedding.lookup(tokenIds);
    }

    @Override
    public NDArray layers(NDArray hidden, StepBatch step) {
        if (layers.isEmpty()) {
            return hidden;
        }
        RotaryEmbedding.Tables rope = rotary.tables(step.manager(), step.positions());
        int heads = config.numHeads();
        int kvHeads = config.numKvHeads();
        long n = step.rows();
        long[] valueStart = {heads + kvHeads};
        long[] keyStart = {heads};
        long[] upStart = {config.intermediateSize()};
        NDArray x = hidden;
        for (int slot = 0; slot < layers.size(); slot++) {
            Layer l = layers.get(slot);
            NDList qkv = l.qkv().apply(Ops.rmsNorm(x, l.inputNorm(), scalars))
                    .reshape(n, heads + 2L * kvHeads, config.headDim())
                    .split(valueStart, 1);
            // q and k are rotated together: one rotation for both.
            NDList qk = rope.apply(qkv.get(0)).split(keyStart, 1);
            NDArray q = qk.get(0).mul(scalars.attentionScale());
            NDArray attn = Attention.attend(q, qk.get(1), qkv.get(1), step, slot);
            x = x.add(l.o().apply(attn));
            NDList gateUp = l.gateUp().apply(Ops.rmsNorm(x, l.postNorm(), scalars)).split(upStart, 1);
            x = x.add(l.down().apply(Ops.siluGate(gateUp.get(0), gateUp.get(1), scalars)));
        }
        return x;
    }

    @Override
    public NDArray head(NDArray lastRows) {
        return lmHead.apply(Ops.rmsNorm(lastRows, finalNorm, scalars));
    }

    @Override
    public void close() {
        manager.close();
    }
}
