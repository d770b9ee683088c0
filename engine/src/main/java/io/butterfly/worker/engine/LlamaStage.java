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
import io.butterfly.common.tensor.ReductionTree;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

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
    private final PartitionSpec spec;
    /** {@link #layout} as numbers: per stage layer, where its weights start and its experts here (0: dense). */
    private final long[] layoutCounts;
    /** With spread experts: how the other groups are asked, and the tree their sums are merged by (else null). */
    private final ExpertExchange exchange;
    private final ReductionTree tree;

    private LlamaStage(NDManager manager, TorchScript script, PartitionSpec spec, StageWeights layers, long[] layout,
                       NDArray embedding, NDArray finalNorm, StageWeights head, long weightBytes, ExpertExchange exchange) {
        ModelConfig config = spec.config();
        int numLayers = spec.numLayers();
        this.spec = spec;
        this.layoutCounts = layout;
        this.exchange = exchange;
        this.tree = spec.spreadsExperts()
                ? new ReductionTree(spec.experts().groups().stream().map(ExpertPlacement.Group::nodeId).toList()) : null;
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

    static LlamaStage load(PartitionSpec spec, WeightStore w, NDManager manager, TorchScript script, WeightDtype dtype,
                           ExpertExchange exchange) {
        if (spec.spreadsExperts() && !spec.experts().expertsOnly() && exchange == null) {
            throw new IllegalStateException("this stage's experts are spread over workers, and it has no way to ask them");
        }
        ModelConfig c = spec.config();
        int[] held = spec.heldExperts();
        boolean expertsOnly = spec.experts() != null && spec.experts().expertsOnly();
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
            layout[2 * (i - spec.layerStart()) + 1] = sparse ? held[1] - held[0] : 0;
            if (expertsOnly) { // a group of another worker's stage: the experts alone
                for (int e = held[0]; sparse && e < held[1]; e++) {
                    addMlp(layers, w, moe.expert(i, e), moe.expertSize(), h);
                }
                continue;
            }
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
            for (int e = held[0]; e < held[1]; e++) {
                addMlp(layers, w, moe.expert(i, e), moe.expertSize(), h);
            }
            if (moe.hasSharedExpert()) {
                addMlp(layers, w, moe.sharedExpert(i), moe.sharedExpertSize(), h);
                layers.add(w.load(moe.sharedExpertGate(i), 1, h)); // as loaded: llama.py takes a dot product with it
            }
        }
        String embedName = "model.embed_tokens.weight";
        boolean tied = !w.has("lm_head.weight");
        if (expertsOnly) {
            return new LlamaStage(manager, script, spec, layers, layout, null, null, null, layers.bytes(), null);
        }
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
        return new LlamaStage(manager, script, spec, layers, layout, embedding, norm, head, bytes, exchange);
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
        if (tree != null) {
            return spreadLayers(hidden, step, rope);
        }
        try (ScriptArgs args = new ScriptArgs()) {
            return script.callForArray(step.manager(), "layers", args.tensor(hidden), layers, layout, dims, constants,
                    args.tensor(rope.cos()), args.tensor(rope.signedSin()), args.ints(step.sequences()),
                    args.tensors(step.caches()));
        }
    }

    /**
     * The layers one at a time, each sparse one's experts computed by their groups: this stage's own here, the others'
     * by their workers, asked only for the rows whose router chose one of their experts; the groups' sums merged by the
     * reduction tree in the order of the groups (docs/sharding.md).
     */
    private NDArray spreadLayers(NDArray x, StepBatch step, RotaryEmbedding.Tables rope) {
        NDManager m = step.manager();
        for (int l = 0; l < numLayers; l++) {
            NDArray[] front;
            try (ScriptArgs args = new ScriptArgs()) {
                front = script.callForArrays(m, "layer_front", args.tensor(x), layers, layout, args.integer(l), dims,
                        constants, args.tensor(rope.cos()), args.tensor(rope.signedSin()), args.ints(step.sequences()),
                        args.tensors(step.caches()));
            }
            NDArray routed = front.length == 4 ? routedSum(l, front[1], front[2], front[3]) : front[1];
            try (ScriptArgs args = new ScriptArgs()) {
                x = script.callForArray(m, "layer_back", args.tensor(front[0]), args.tensor(front[1]), args.tensor(routed),
                        layers, layout, args.integer(l), dims, constants);
            }
        }
        return x;
    }

    /** The routed experts' sum over h: every group's, merged by the tree. */
    private NDArray routedSum(int l, NDArray h, NDArray flatWeights, NDArray chosen) {
        ExpertPlacement placement = spec.experts();
        int rows = Math.toIntExact(h.getShape().get(0));
        int width = config.hiddenSize();
        int topK = config.experts().perToken();
        float[] hidden = h.toFloatArray();
        long[] choice = chosen.toLongArray();
        float[] weights = flatWeights.toFloatArray();
        int layer = spec.layerStart() + l;
        List<CompletableFuture<float[]>> asked = new ArrayList<>();
        List<int[]> sentRows = new ArrayList<>();
        for (ExpertPlacement.Group g : placement.groups()) {
            int[] sel = g == placement.own() ? null : rowsChoosing(g, choice, rows, topK);
            sentRows.add(sel);
            asked.add(sel == null || sel.length == 0 ? null : exchange.partial(g, layer, sel.length,
                    gather(hidden, sel, width), gather(choice, sel, topK), gather(weights, sel, topK)));
        }
        ReductionTree.Reduction sum = tree.start(rows * width);
        ExpertPlacement.Group own = placement.own();
        try (ScriptArgs args = new ScriptArgs()) { // this stage's group while the others compute theirs
            sum.add(own.nodeId(), script.callForArray(h.getManager(), "layer_group", args.tensor(h), layers, layout,
                    args.integer(l), args.integer(own.first()), args.tensor(chosen), args.tensor(flatWeights), dims,
                    constants).toFloatArray());
        }
        for (int i = 0; i < placement.groups().size(); i++) {
            ExpertPlacement.Group g = placement.groups().get(i);
            if (g == own) {
                continue;
            }
            sum.add(g.nodeId(), asked.get(i) == null ? null : scatter(await(asked.get(i), g, layer), sentRows.get(i), rows, width));
        }
        return h.getManager().create(sum.result(), new Shape(rows, width));
    }

    private static final long EXPERT_TIMEOUT_SECONDS = 60;

    private static float[] await(CompletableFuture<float[]> partial, ExpertPlacement.Group g, int layer) {
        try {
            return partial.get(EXPERT_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for expert group " + g.nodeId(), e);
        } catch (ExecutionException | TimeoutException e) {
            Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
            throw new ExpertGroupUnavailableException(g.nodeId(), layer, cause);
        }
    }

    /** The rows that chose one of the group's experts, in order. */
    static int[] rowsChoosing(ExpertPlacement.Group g, long[] chosen, int rows, int topK) {
        int[] sel = new int[rows];
        int n = 0;
        for (int r = 0; r < rows; r++) {
            for (int k = 0; k < topK; k++) {
                if (g.holds(chosen[r * topK + k])) {
                    sel[n++] = r;
                    break;
                }
            }
        }
        return Arrays.copyOf(sel, n);
    }

    private static float[] gather(float[] from, int[] rows, int width) {
        float[] out = new float[rows.length * width];
        for (int i = 0; i < rows.length; i++) {
            System.arraycopy(from, rows[i] * width, out, i * width, width);
        }
        return out;
    }

    private static long[] gather(long[] from, int[] rows, int width) {
        long[] out = new long[rows.length * width];
        for (int i = 0; i < rows.length; i++) {
            System.arraycopy(from, rows[i] * width, out, i * width, width);
        }
        return out;
    }

    /** A group's sums of the rows sent, as all rows' (zero for the others: a group's sum is never -0, see llama.py). */
    private static float[] scatter(float[] partial, int[] rows, int total, int width) {
        if (partial.length != rows.length * width) {
            throw new IllegalStateException("an expert group answered " + partial.length + " values for " + rows.length
                    + " rows of " + width);
        }
        float[] out = new float[total * width];
        for (int i = 0; i < rows.length; i++) {
            System.arraycopy(partial, i * width, out, rows[i] * width, width);
        }
        return out;
    }

    /**
     * A group of another worker's stage: its experts' sum over the rows sent ({@code hidden [rows, hidden]}, each row's
     * chosen experts and their weights {@code [rows, topK]}) for the model's layer {@code layer}.
     */
    float[] expertGroup(NDManager m, int layer, int rows, float[] hidden, long[] chosen, float[] weights) {
        int l = layer - spec.layerStart();
        int topK = config.experts().perToken();
        if (l < 0 || l >= numLayers || layoutCounts[2 * l + 1] == 0) {
            throw new IllegalArgumentException("layer " + layer + " is not a sparse layer of this expert group's ["
                    + spec.layerStart() + ", " + spec.layerEnd() + ")");
        }
        if (hidden.length != rows * config.hiddenSize() || chosen.length != rows * topK || weights.length != rows * topK) {
            throw new IllegalArgumentException("expected " + rows + " rows of " + config.hiddenSize() + " values and "
                    + topK + " choices");
        }
        ExpertPlacement.Group own = spec.experts().own();
        try (ScriptArgs args = new ScriptArgs()) {
            return script.callForArray(m, "experts_only", args.tensor(m.create(hidden, new Shape(rows, config.hiddenSize()))),
                    layers, args.integer(layoutCounts[2 * l]), args.integer(own.first()),
                    args.integer(own.end() - own.first()), args.tensor(m.create(chosen, new Shape(rows, topK))),
                    args.tensor(m.create(weights)), args.integer(topK), args.integer(script.linear().rowQuantum()),
                    constants).toFloatArray();
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
