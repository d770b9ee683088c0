package io.butterfly.cli.reference;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.core.Linear;
import ai.djl.nn.norm.LayerNorm;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.safetensors.TensorInfo;
import io.butterfly.worker.engine.DjlPartitionExecutor;
import io.butterfly.worker.engine.EngineSetup;
import io.butterfly.worker.engine.ExecutorOptions;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The baseline the benchmark compares with: the plain in-process greedy loop a DJL user would write.
 * The whole {@code model.safetensors} is decoded with DJL's own decoder, each projection is its own
 * {@code linear} on the stored weights (q, k, v, gate, up separately; GPT-2's Conv1D with
 * {@code matMul}), rotary tables and masks are built with NDArray ops each step, kv heads are repeated
 * for grouped-query attention, and the KV cache grows by concatenation as in a torch loop.
 *
 * <p>It shares no math with {@link DjlPartitionExecutor} and produces the same greedy tokens (tested).
 */
public final class PlainDjlLoop implements AutoCloseable {

    /** Outcome of a greedy run: the generated tokens and how long prefill and decode took. */
    public record Run(long[] tokens, double prefillMillis, double decodeMillis) {

        /** Decode throughput: tokens after the first (which prefill produces) per second of decode. */
        public double decodeTokensPerSecond() {
            return tokens.length <= 1 || decodeMillis <= 0 ? 0 : (tokens.length - 1) * 1000.0 / decodeMillis;
        }
    }

    private final ModelConfig config;
    private final NDManager manager;
    private final Map<String, NDArray> weights = new HashMap<>();

    private PlainDjlLoop(ModelConfig config, NDManager manager) {
        this.config = config;
        this.manager = manager;
    }

    /** Loads {@code config.json} and {@code model.safetensors} from a model directory. */
    public static PlainDjlLoop load(Path modelDir, ExecutorOptions options) throws IOException {
        ModelConfig config = ModelConfig.read(modelDir.resolve("config.json"));
        Path file = modelDir.resolve("model.safetensors");
        try (SafetensorsFile header = SafetensorsFile.open(file)) {
            for (TensorInfo t : header.tensors().values()) {
                if (!t.dtype().equals("F32") && !t.dtype().equals("F16")) {
                    // DJL 0.35.1 aborts the JVM on BF16; the plain loop only takes what DJL decodes.
                    throw new IllegalArgumentException("the plain DJL loop reads F32/F16 only; " + t + " is " + t.dtype());
                }
            }
        }
        Engine engine = EngineSetup.start(options.threads());
        Device device = EngineSetup.device(options.device(), engine);
        PlainDjlLoop loop = new PlainDjlLoop(config, NDManager.newBaseManager(device, EngineSetup.ENGINE));
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 20)) {
            NDList decoded = NDList.decode(loop.manager, in);
            for (NDArray a : decoded) {
                NDArray f32 = a.getDataType() == DataType.FLOAT32 ? a : a.toType(DataType.FLOAT32, false);
                loop.weights.put(a.getName(), f32);
            }
        } catch (IOException | RuntimeException e) {
            loop.close();
            throw e;
        }
        return loop;
    }

    /** Loads the model, warms up, and measures greedy decode tokens/s for {@code tokens} new tokens. */
    public ModelConfig config() {
        return config;
    }

    /** Greedy-decodes {@code newTokens} tokens after the prompt. */
    public long[] greedy(long[] prompt, int newTokens) {
        return generate(prompt, newTokens).tokens();
    }

    /** Greedy decoding with timings: prefill yields the first token, each decode step one more. */
    public Run generate(long[] prompt, int newTokens) {
        if (prompt.length == 0 || newTokens <= 0) {
            throw new IllegalArgumentException("need a non-empty prompt and newTokens > 0");
        }
        long[] out = new long[newTokens];
        NDArray[] keyCache = new NDArray[config.numLayers()];
        NDArray[] valueCache = new NDArray[config.numLayers()];
        try (NDManager sequence = manager.newSubManager()) {
            long t0 = System.nanoTime();
            out[0] = argMax(step(sequence, prompt, 0, keyCache, valueCache));
            long t1 = System.nanoTime();
            int position = prompt.length;
            for (int i = 1; i < newTokens; i++) {
                out[i] = argMax(step(sequence, new long[]{out[i - 1]}, position, keyCache, valueCache));
                position++;
            }
            long t2 = System.nanoTime();
            return new Run(out, (t1 - t0) / 1e6, (t2 - t1) / 1e6);
        }
    }

    /** Logits after the prompt, then after each of {@code next} fed one by one through the cache (tests). */
    List<float[]> teacherForced(long[] prompt, long[] next) {
        NDArray[] k = new NDArray[config.numLayers()];
        NDArray[] v = new NDArray[config.numLayers()];
        List<float[]> out = new ArrayList<>();
        try (NDManager sequence = manager.newSubManager()) {
            out.add(step(sequence, prompt, 0, k, v));
            for (int i = 0; i < next.length; i++) {
                out.add(step(sequence, new long[]{next[i]}, prompt.length + i, k, v));
            }
        }
        return out;
    }

    @SuppressWarnings("try") // the scope only frees temporaries on close
    private float[] step(NDManager sequence, long[] ids, int position, NDArray[] keyCache, NDArray[] valueCache) {
        try (NDScope ignored = new NDScope()) {
            NDArray logits = config.architecture() == Architecture.GPT2
                    ? gpt2(ids, position, keyCache, valueCache, sequence)
                    : llama(ids, position, keyCache, valueCache, sequence);
            return logits.toFloatArray();
        }
    }

    private NDArray llama(long[] ids, int position, NDArray[] kc, NDArray[] vc, NDManager sequence) {
        int n = ids.length;
        int heads = config.numHeads();
        int kvHeads = config.numKvHeads();
        int d = config.headDim();
        float eps = (float) config.normEps();
        NDArray x = w("model.embed_tokens.weight").get(manager.create(ids));
        // HF LlamaRotaryEmbedding: inv_freq = 1 / theta^(arange(0, d, 2) / d); emb = cat(freqs, freqs).
        NDArray exponent = manager.arange(0, d, 2, DataType.FLOAT32).div(d);
        NDArray invFreq = manager.ones(exponent.getShape())
                .div(manager.full(exponent.getShape(), (float) config.ropeTheta()).pow(exponent));
        if (config.ropeScaling() != null) {
            invFreq = manager.create(config.ropeScaling().apply(invFreq.toFloatArray()));
        }
        NDArray pos = manager.arange(position, position + n, 1, DataType.FLOAT32).reshape(n, 1);
        NDArray freqs = pos.matMul(invFreq.reshape(1, d / 2));
        NDArray emb = freqs.concat(freqs, -1);
        NDArray cos = emb.cos().reshape(1, n, d);
        NDArray sin = emb.sin().reshape(1, n, d);
        NDArray mask = causalMask(n, position);
        for (int i = 0; i < config.numLayers(); i++) {
            String p = "model.layers." + i + ".";
            NDArray h = rmsNorm(x, w(p + "input_layernorm.weight"), eps);
            NDArray q = linear(h, p + "self_attn.q_proj").reshape(n, heads, d).transpose(1, 0, 2);
            NDArray k = linear(h, p + "self_attn.k_proj").reshape(n, kvHeads, d).transpose(1, 0, 2);
            NDArray v = linear(h, p + "self_attn.v_proj").reshape(n, kvHeads, d).transpose(1, 0, 2);
            q = q.mul(cos).add(rotateHalf(q).mul(sin));
            k = k.mul(cos).add(rotateHalf(k).mul(sin));
            k = append(kc, i, k, sequence);
            v = append(vc, i, v, sequence);
            NDArray a = attention(q, repeatKv(k, heads / kvHeads), repeatKv(v, heads / kvHeads), mask);
            x = x.add(linear(a.transpose(1, 0, 2).reshape(n, heads * d), p + "self_attn.o_proj"));
            h = rmsNorm(x, w(p + "post_attention_layernorm.weight"), eps);
            NDArray gate = linear(h, p + "mlp.gate_proj");
            NDArray up = linear(h, p + "mlp.up_proj");
            x = x.add(linear(gate.mul(Activation.sigmoid(gate)).mul(up), p + "mlp.down_proj"));
        }
        NDArray last = x.get(new NDIndex(n - 1));
        NDArray head = weights.containsKey("lm_head.weight") ? w("lm_head.weight") : w("model.embed_tokens.weight");
        return Linear.linear(rmsNorm(last, w("model.norm.weight"), eps), head).singletonOrThrow();
    }

    private NDArray gpt2(long[] ids, int position, NDArray[] kc, NDArray[] vc, NDManager sequence) {
        int n = ids.length;
        int heads = config.numHeads();
        int d = config.headDim();
        int hidden = config.hiddenSize();
        float eps = (float) config.normEps();
        Shape norm = new Shape(hidden);
        NDArray positions = manager.arange(position, position + n, 1, DataType.INT64);
        NDArray x = g("wte.weight").get(manager.create(ids)).add(g("wpe.weight").get(positions));
        NDArray mask = causalMask(n, position);
        for (int i = 0; i < config.numLayers(); i++) {
            String p = "h." + i + ".";
            NDArray h = LayerNorm.layerNorm(x, norm, g(p + "ln_1.weight"), g(p + "ln_1.bias"), eps).singletonOrThrow();
            NDArray qkv = h.matMul(g(p + "attn.c_attn.weight")).add(g(p + "attn.c_attn.bias"));
            NDList split = qkv.split(3, 1);
            NDArray q = split.get(0).reshape(n, heads, d).transpose(1, 0, 2);
            NDArray k = append(kc, i, split.get(1).reshape(n, heads, d).transpose(1, 0, 2), sequence);
            NDArray v = append(vc, i, split.get(2).reshape(n, heads, d).transpose(1, 0, 2), sequence);
            NDArray a = attention(q, k, v, mask).transpose(1, 0, 2).reshape(n, hidden);
            x = x.add(a.matMul(g(p + "attn.c_proj.weight")).add(g(p + "attn.c_proj.bias")));
            h = LayerNorm.layerNorm(x, norm, g(p + "ln_2.weight"), g(p + "ln_2.bias"), eps).singletonOrThrow();
            NDArray f = h.matMul(g(p + "mlp.c_fc.weight")).add(g(p + "mlp.c_fc.bias"));
            NDArray gelu = f.mul(0.5f).mul(f.add(f.pow(3f).mul(0.044715f)).mul((float) Math.sqrt(2 / Math.PI)).tanh().add(1f));
            x = x.add(gelu.matMul(g(p + "mlp.c_proj.weight")).add(g(p + "mlp.c_proj.bias")));
        }
        NDArray last = x.get(new NDIndex(n - 1));
        last = LayerNorm.layerNorm(last, norm, g("ln_f.weight"), g("ln_f.bias"), eps).singletonOrThrow();
        NDArray head = weights.containsKey("lm_head.weight") ? w("lm_head.weight") : g("wte.weight");
        return Linear.linear(last, head).singletonOrThrow();
    }

    /** Scaled dot-product attention over [heads, n, d] queries and [heads, total, d] keys/values. */
    private NDArray attention(NDArray q, NDArray k, NDArray v, NDArray mask) {
        NDArray scores = q.matMul(k.transpose(0, 2, 1)).mul((float) (1.0 / Math.sqrt(config.headDim())));
        if (mask != null) {
            scores = scores.add(mask);
        }
        return scores.softmax(-1).matMul(v);
    }

    private NDArray causalMask(int n, int position) {
        if (n == 1) {
            return null;
        }
        NDArray rows = manager.arange(position, position + n, 1, DataType.INT64).reshape(n, 1);
        NDArray cols = manager.arange(0, position + n, 1, DataType.INT64).reshape(1, position + n);
        // HF fills masked scores with the float32 minimum.
        return cols.gt(rows).toType(DataType.FLOAT32, false).mul(-Float.MAX_VALUE);
    }

    private static NDArray rotateHalf(NDArray x) {
        long half = x.getShape().get(2) / 2;
        NDArray x1 = x.get(new NDIndex(":, :, :" + half));
        NDArray x2 = x.get(new NDIndex(":, :, " + half + ":"));
        return x2.neg().concat(x1, -1);
    }

    private static NDArray repeatKv(NDArray kv, int group) {
        return group == 1 ? kv : kv.repeat(0, group);
    }

    /** torch-style cache: {@code cache = cat(cache, new)} along the sequence axis. */
    private static NDArray append(NDArray[] cache, int layer, NDArray fresh, NDManager sequence) {
        NDArray grown = cache[layer] == null ? fresh.duplicate() : cache[layer].concat(fresh, 1);
        NDScope.unregister(grown);
        grown.attach(sequence);
        if (cache[layer] != null) {
            cache[layer].close();
        }
        cache[layer] = grown;
        return grown;
    }

    private NDArray rmsNorm(NDArray x, NDArray weight, float eps) {
        NDArray variance = x.pow(2f).mean(new int[]{-1}, true);
        return weight.mul(x.div(variance.add(eps).sqrt()));
    }

    private NDArray linear(NDArray x, String prefix) {
        NDArray bias = weights.get(prefix + ".bias");
        return (bias == null ? Linear.linear(x, w(prefix + ".weight")) : Linear.linear(x, w(prefix + ".weight"), bias))
                .singletonOrThrow();
    }

    private NDArray w(String name) {
        NDArray a = weights.get(name);
        if (a == null) {
            throw new IllegalArgumentException("model has no tensor '" + name + "'");
        }
        return a;
    }

    /** GPT-2 names with or without the {@code transformer.} prefix. */
    private NDArray g(String name) {
        NDArray a = weights.get("transformer." + name);
        return a != null ? a : w(name);
    }

    /** The first index of the largest logit, as greedy sampling picks it. */
    public static long argMax(float[] logits) {
        int best = 0;
        for (int i = 1; i < logits.length; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        return best;
    }

    @Override
    public void close() {
        manager.close();
    }
}
