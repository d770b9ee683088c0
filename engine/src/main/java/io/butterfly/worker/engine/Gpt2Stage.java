package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.pytorch.jni.IValue;
import io.butterfly.common.model.ModelConfig;

/**
 * GPT-2 stage: learned positions, LayerNorm, fused {@code c_attn}, GELU (tanh) MLP and a head tied to {@code wte}
 * unless {@code lm_head.weight} exists, computed by {@code torchscript/gpt2.py}. Conv1D weights are stored
 * {@code [in, out]} and loaded transposed, as projections take them. Names are accepted with or without the
 * {@code transformer.} prefix.
 */
final class Gpt2Stage implements StageModel {

    private final NDManager manager;
    private final TorchScript script;
    private final ModelConfig config;
    /** Per layer, as gpt2.py reads them: ln_1 weight, bias; c_attn; attn.c_proj; ln_2 weight, bias; c_fc; mlp.c_proj. */
    private final IValue layers;
    private final int numLayers;
    private final IValue dims;
    /** gpt2.py's constants: attention scale, 1, 0.5, 0.044715, sqrt(2 / pi). */
    private final IValue constants;
    private final NDArray wte;
    private final NDArray wpe;
    private final IValue finalNorm;
    private final IValue head;
    private final long weightBytes;

    private Gpt2Stage(NDManager manager, TorchScript script, ModelConfig config, StageWeights layers, int numLayers,
                      NDArray wte, NDArray wpe, StageWeights finalNorm, StageWeights head, long weightBytes) {
        this.manager = manager;
        this.script = script;
        this.config = config;
        this.layers = layers.toList();
        this.numLayers = numLayers;
        this.dims = IValue.listFrom(config.numHeads(), config.headDim());
        this.constants = IValue.listFrom(LlamaStage.scalar(manager, 1.0 / Math.sqrt(config.headDim())),
                LlamaStage.scalar(manager, 1), LlamaStage.scalar(manager, 0.5), LlamaStage.scalar(manager, 0.044715),
                LlamaStage.scalar(manager, Math.sqrt(2.0 / Math.PI)));
        this.wte = wte;
        this.wpe = wpe;
        this.finalNorm = finalNorm == null ? null : finalNorm.toList();
        this.head = head == null ? null : head.toList();
        this.weightBytes = weightBytes;
    }

    static Gpt2Stage load(PartitionSpec spec, WeightStore w, NDManager manager, TorchScript script, WeightDtype dtype) {
        ModelConfig c = spec.config();
        long h = c.hiddenSize();
        long inner = c.intermediateSize();
        StageWeights layers = new StageWeights(script, manager, dtype);
        for (int i = spec.layerStart(); i < spec.layerEnd(); i++) {
            String p = "h." + i + ".";
            layers.add(w.load(name(w, p + "ln_1.weight"), h)).add(w.load(name(w, p + "ln_1.bias"), h));
            conv1d(layers, w, p + "attn.c_attn", h, 3 * h);
            conv1d(layers, w, p + "attn.c_proj", h, h);
            layers.add(w.load(name(w, p + "ln_2.weight"), h)).add(w.load(name(w, p + "ln_2.bias"), h));
            conv1d(layers, w, p + "mlp.c_fc", h, inner);
            conv1d(layers, w, p + "mlp.c_proj", inner, h);
        }
        boolean tied = !w.has("lm_head.weight");
        NDArray wte = null;
        NDArray wpe = null;
        long bytes = layers.bytes();
        if (spec.hasEmbedding()) {
            wte = w.load(name(w, "wte.weight"), c.vocabSize(), h);
            wpe = w.load(name(w, "wpe.weight"), c.maxPositions(), h);
            bytes += (wte.size() + wpe.size()) * Float.BYTES;
        }
        StageWeights norm = null;
        StageWeights head = null;
        if (spec.hasHead()) {
            norm = new StageWeights(script, manager, dtype).add(w.load(name(w, "ln_f.weight"), h)).add(w.load(name(w, "ln_f.bias"), h));
            head = new StageWeights(script, manager, dtype);
            if (tied && wte != null) {
                head.addSharedProjection(wte, null);
            } else {
                head.addProjection(w.load(tied ? name(w, "wte.weight") : "lm_head.weight", c.vocabSize(), h), null);
            }
            bytes += norm.bytes() + head.bytes();
        }
        return new Gpt2Stage(manager, script, c, layers, spec.numLayers(), wte, wpe, norm, head, bytes);
    }

    /** Conv1D: weights stored {@code [in, out]}, taken as {@code [out, in]}. */
    private static void conv1d(StageWeights layers, WeightStore w, String prefix, long in, long out) {
        layers.addProjection(w.loadTransposed(name(w, prefix + ".weight"), in, out), w.load(name(w, prefix + ".bias"), out));
    }

    private static String name(WeightStore w, String suffix) {
        return w.firstPresent("transformer." + suffix, suffix);
    }

    @Override
    public NDArray embed(NDArray tokenIds, StepBatch step) {
        try (ScriptArgs args = new ScriptArgs()) {
            return script.callForArray(step.manager(), "embed", args.tensor(wte), args.tensor(wpe), args.tensor(tokenIds),
                    args.tensor(step.manager().create(step.positions())));
        }
    }

    @Override
    public NDArray layers(NDArray hidden, StepBatch step) {
        if (numLayers == 0) {
            return hidden;
        }
        try (ScriptArgs args = new ScriptArgs()) {
            return script.callForArray(step.manager(), "layers", args.tensor(hidden), layers, dims,
                    args.number(config.normEps()), constants, args.ints(step.sequences()), args.tensors(step.caches()));
        }
    }

    @Override
    public NDArray head(NDArray hidden, NDArray rows) {
        try (ScriptArgs args = new ScriptArgs()) {
            return script.callForArray(rows.getManager(), "head", args.tensor(hidden), args.tensor(rows), finalNorm, head,
                    args.number(config.normEps()));
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
        dims.close();
        constants.close();
        if (head != null) {
            head.close();
            finalNorm.close();
        }
        script.close();
        manager.close();
    }
}
