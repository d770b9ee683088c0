package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import io.butterfly.common.model.ModelConfig;
import java.util.ArrayList;
import java.util.List;

/**
 * GPT-2 stage: learned positions, LayerNorm, fused {@code c_attn}, GELU (tanh) MLP and a head tied to
 * {@code wte} unless {@code lm_head.weight} exists. Conv1D weights are stored {@code [in, out]} (see
 * {@link Projection} for the layout kept). Names are accepted with or without the {@code transformer.}
 * prefix.
 */
final class Gpt2Stage implements StageModel {

    record Layer(NDArray ln1Weight, NDArray ln1Bias, Projection attn, Projection attnProj, NDArray ln2Weight,
                 NDArray ln2Bias, Projection fc, Projection mlpProj) {
    }

    private final NDManager manager;
    private final ModelConfig config;
    private final float eps;
    private final Ops.Scalars scalars;
    private final List<Layer> layers;
    private final TokenEmbedding wte;
    private final NDArray wpe;
    private final NDArray lnFWeight;
    private final NDArray lnFBias;
    private final Projection lmHead;

    private Gpt2Stage(NDManager manager, ModelConfig config, List<Layer> layers, TokenEmbedding wte, NDArray wpe,
                      NDArray lnFWeight, NDArray lnFBias, Projection lmHead) {
        this.manager = manager;
        this.config = config;
        this.eps = (float) config.normEps();
        this.scalars = Ops.Scalars.create(manager, config.normEps(), config.headDim());
        this.layers = layers;
        this.wte = wte;
        this.wpe = wpe;
        this.lnFWeight = lnFWeight;
        this.lnFBias = lnFBias;
        this.lmHead = lmHead;
    }

    static Gpt2Stage load(PartitionSpec spec, WeightStore w, NDManager manager) {
        ModelConfig c = spec.config();
        long h = c.hiddenSize();
        long inner = c.intermediateSize();
        List<Layer> layers = new ArrayList<>();
        for (int i = spec.layerStart(); i < spec.layerEnd(); i++) {
            String p = "h." + i + ".";
            layers.add(new Layer(
                    w.load(name(w, p + "ln_1.weight"), h), w.load(name(w, p + "ln_1.bias"), h),
                    conv1d(w, p + "attn.c_attn", h, 3 * h), conv1d(w, p + "attn.c_proj", h, h),
                    w.load(name(w, p + "ln_2.weight"), h), w.load(name(w, p + "ln_2.bias"), h),
                    conv1d(w, p + "mlp.c_fc", h, inner), conv1d(w, p + "mlp.c_proj", inner, h)));
        }
        boolean tied = !w.has("lm_head.weight");
        NDArray lnW = null;
        NDArray lnB = null;
        Projection head = null;
        if (spec.hasHead()) {
            lnW = w.load(name(w, "ln_f.weight"), h);
            lnB = w.load(name(w, "ln_f.bias"), h);
            head = Projection.load(w, tied ? name(w, "wte.weight") : "lm_head.weight", h, c.vocabSize(), false, null);
        }
        TokenEmbedding wte = null;
        NDArray wpe = null;
        if (spec.hasEmbedding()) {
            wte = tied && head != null && head.inOut() != null
                    ? TokenEmbedding.columnsOf(head.inOut())
                    : TokenEmbedding.rowsOf(w.load(name(w, "wte.weight"), c.vocabSize(), h));
            wpe = w.load(name(w, "wpe.weight"), c.maxPositions(), h);
        }
        return new Gpt2Stage(manager, c, layers, wte, wpe, lnW, lnB, head);
    }

    /** Conv1D: weights stored {@code [in, out]}. */
    private static Projection conv1d(WeightStore w, String prefix, long in, long out) {
        return Projection.load(w, name(w, prefix + ".weight"), in, out, true, w.load(name(w, prefix + ".bias"), out));
    }

    private static String name(WeightStore w, String suffix) {
        return w.firstPresent("transformer." + suffix, suffix);
    }

    @Override
    public NDArray embed(NDArray tokenIds, StepBatch step) {
        NDArray positions = step.manager().create(step.positions());
        return wte.lookup(tokenIds).add(wpe.get(positions));
    }

    @Override
    public NDArray layers(NDArray hidden, StepBatch step) {
        int heads = config.numHeads();
        long n = step.rows();
        long[] kvStarts = {heads, 2L * heads};
        NDArray x = hidden;
        for (int slot = 0; slot < layers.size(); slot++) {
            Layer l = layers.get(slot);
            NDList qkv = l.attn().apply(Ops.layerNorm(x, l.ln1Weight(), l.ln1Bias(), eps))
                    .reshape(n, 3L * heads, config.headDim())
                    .split(kvStarts, 1);
            NDArray q = qkv.get(0).mul(scalars.attentionScale());
            NDArray attn = Attention.attend(q, qkv.get(1), qkv.get(2), step, slot);
            x = x.add(l.attnProj().apply(attn));
            NDArray fc = l.fc().apply(Ops.layerNorm(x, l.ln2Weight(), l.ln2Bias(), eps));
            x = x.add(l.mlpProj().apply(Ops.geluTanh(fc, scalars)));
        }
        return x;
    }

    @Override
    public NDArray head(NDArray lastRows) {
        return lmHead.apply(Ops.layerNorm(lastRows, lnFWeight, lnFBias, eps));
    }

    @Override
    public void close() {
        manager.close();
    }
}
