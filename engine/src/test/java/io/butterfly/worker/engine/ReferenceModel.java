package io.butterfly.worker.engine;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.MixtureOfExperts;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.quant.GgmlQuants;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.QuantizedTensors;
import io.butterfly.common.safetensors.SafetensorsFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Independent reference written from the formulas (test only): plain Java, one token at a time,
 * double-precision accumulation, weights read with {@link SafetensorsFile#readFloats} (ggml blocks dequantized as
 * ggml's reference code does). Shares no code with the executor. Feeding a prompt token by token with a growing cache
 * is, by causality, the same as a masked prefill.
 *
 * <p>With {@link #withInt8Activations()}, the input of each product with a matrix stored in ggml blocks is first rounded
 * as llama.cpp's kernels round it: to float32, then in blocks of 32 to {@code round(x * 127 / max|x|)} (ties to even)
 * times {@code max|x| / 127}.
 */
final class ReferenceModel {

    private final ModelConfig c;
    private final Map<String, float[]> t = new HashMap<>();
    /** The matrices stored in ggml blocks. */
    private final java.util.Set<String> quantized = new java.util.HashSet<>();
    private boolean int8Activations;
    /** The experts any router chose so far. */
    private final java.util.Set<Integer> expertsUsed = new java.util.TreeSet<>();
    /** keys.get(layer).get(position) = [kvHeads * headDim]. */
    private final List<List<double[]>> keys = new ArrayList<>();
    private final List<List<double[]>> values = new ArrayList<>();

    ReferenceModel(ModelConfig config, Path safetensors) throws IOException {
        this.c = config;
        try (SafetensorsFile f = SafetensorsFile.open(safetensors)) {
            for (String name : f.tensors().keySet()) {
                String key = name.startsWith("transformer.") ? name.substring("transformer.".length()) : name;
                GgmlType type = QuantizedTensors.storedType(f, name);
                if (type.quantized()) {
                    long[] shape = QuantizedTensors.logicalShape(f, name);
                    float[] values = new float[Math.toIntExact(shape[0] * shape[1])];
                    GgmlQuants.dequantize(type, f.rawBytes(name), values, 0, values.length);
                    t.put(key, values);
                    quantized.add(key);
                } else {
                    t.put(key, f.readFloats(name));
                }
            }
        }
        for (int i = 0; i < c.numLayers(); i++) {
            keys.add(new ArrayList<>());
            values.add(new ArrayList<>());
        }
    }

    /** This reference with the inputs of products with quantized matrices rounded to 8 bits (see the class comment). */
    ReferenceModel withInt8Activations() {
        int8Activations = true;
        return this;
    }

    java.util.Set<Integer> expertsUsed() {
        return expertsUsed;
    }

    int position() {
        return keys.get(0).size();
    }

    /** Feeds tokens; returns the logits after the last one. */
    double[] feed(long... ids) {
        double[] logits = null;
        for (long id : ids) {
            logits = c.architecture() == Architecture.GPT2 ? gpt2Token((int) id) : llamaToken((int) id);
        }
        return logits;
    }

    private double[] llamaToken(int id) {
        int h = c.hiddenSize();
        int d = c.headDim();
        int pos = position();
        double[] x = row(t.get("model.embed_tokens.weight"), id, h);
        for (int l = 0; l < c.numLayers(); l++) {
            String p = "model.layers." + l + ".";
            double[] n1 = rms(x, t.get(p + "input_layernorm.weight"));
            double[] q = matVec(p + "self_attn.q_proj", n1);
            double[] k = matVec(p + "self_attn.k_proj", n1);
            double[] v = matVec(p + "self_attn.v_proj", n1);
            if (c.qkNorm()) {
                headNorms(q, t.get(p + "self_attn.q_norm.weight"));
                headNorms(k, t.get(p + "self_attn.k_norm.weight"));
            }
            rope(q, c.numHeads(), d, pos);
            rope(k, c.numKvHeads(), d, pos);
            double[] attn = attend(l, q, k, v);
            add(x, matVec(p + "self_attn.o_proj", attn));
            double[] n2 = rms(x, t.get(p + "post_attention_layernorm.weight"));
            MixtureOfExperts moe = c.experts();
            add(x, moe != null && moe.sparse(l) ? sparseMlp(moe, l, n2)
                    : mlp(p + "mlp.gate_proj", p + "mlp.up_proj", p + "mlp.down_proj", n2));
        }
        double[] out = rms(x, t.get("model.norm.weight"));
        String head = t.containsKey("lm_head.weight") ? "lm_head.weight" : "model.embed_tokens.weight";
        return rowsDot(t.get(head), c.vocabSize(), input(head, out));
    }

    /** down(silu(gate x) * up x), each name a weight's prefix (without ".weight"). */
    private double[] mlp(String gateName, String upName, String downName, double[] x) {
        double[] gate = matVec(gateName, x);
        double[] up = matVec(upName, x);
        double[] act = new double[gate.length];
        for (int i = 0; i < act.length; i++) {
            act[i] = gate[i] / (1 + Math.exp(-gate[i])) * up[i];
        }
        return matVec(downName, act);
    }

    /**
     * A mixture of experts from its formulas: p = softmax(router x) over all experts; the k largest p (ties: lower
     * expert first), divided by their sum when normalized; sum of p_e * expert_e(x); plus sigmoid(g x) * shared(x).
     */
    private double[] sparseMlp(MixtureOfExperts moe, int layer, double[] x) {
        double[] p = softmax(matVec(strip(moe.router(layer)), x));
        int[] chosen = topK(p, moe.perToken());
        for (int e : chosen) {
            expertsUsed.add(e);
        }
        double sum = 0;
        for (int e : chosen) {
            sum += p[e];
        }
        double[] out = new double[x.length];
        for (int e : chosen) {
            String[] w = moe.expert(layer, e);
            double[] y = mlp(strip(w[0]), strip(w[1]), strip(w[2]), x);
            double weight = moe.normalizeTopK() ? p[e] / sum : p[e];
            for (int i = 0; i < out.length; i++) {
                out[i] += weight * y[i];
            }
        }
        if (moe.hasSharedExpert()) {
            String[] w = moe.sharedExpert(layer);
            double[] y = mlp(strip(w[0]), strip(w[1]), strip(w[2]), x);
            double gate = 1 / (1 + Math.exp(-matVec(strip(moe.sharedExpertGate(layer)), x)[0]));
            for (int i = 0; i < out.length; i++) {
                out[i] += gate * y[i];
            }
        }
        return out;
    }

    private static String strip(String weightName) {
        return weightName.substring(0, weightName.length() - ".weight".length());
    }

    static double[] softmax(double[] z) {
        double max = Double.NEGATIVE_INFINITY;
        for (double v : z) {
            max = Math.max(max, v);
        }
        double[] p = new double[z.length];
        double sum = 0;
        for (int i = 0; i < z.length; i++) {
            p[i] = Math.exp(z[i] - max);
            sum += p[i];
        }
        for (int i = 0; i < z.length; i++) {
            p[i] /= sum;
        }
        return p;
    }

    /** The indices of the k largest values, largest first; of equal values the lower index first. */
    static int[] topK(double[] p, int k) {
        int[] chosen = new int[k];
        boolean[] taken = new boolean[p.length];
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int i = 0; i < p.length; i++) {
                if (!taken[i] && (best < 0 || p[i] > p[best])) {
                    best = i;
                }
            }
            taken[best] = true;
            chosen[j] = best;
        }
        return chosen;
    }

    /** RMSNorm of each head of {@code x} (heads of {@code w.length} values) with weights {@code w}. */
    private void headNorms(double[] x, float[] w) {
        int d = w.length;
        for (int head = 0; head < x.length / d; head++) {
            double[] normed = rms(slice(x, head * d, head * d + d), w);
            System.arraycopy(normed, 0, x, head * d, d);
        }
    }

    /** x as a product with matrix {@code name} takes it: rounded to 8 bits if asked and the matrix is quantized. */
    private double[] input(String name, double[] x) {
        if (!int8Activations || !quantized.contains(name)) {
            return x;
        }
        double[] rounded = new double[x.length];
        for (int b = 0; b < x.length / 32; b++) {
            float max = 0;
            for (int i = 32 * b; i < 32 * b + 32; i++) {
                max = Math.max(max, Math.abs((float) x[i]));
            }
            float scale = max / 127f;
            float inverse = max != 0 ? 127f / max : 0f;
            for (int i = 32 * b; i < 32 * b + 32; i++) {
                rounded[i] = Math.rint((float) x[i] * inverse) * scale;
            }
        }
        return rounded;
    }

    private double[] gpt2Token(int id) {
        int h = c.hiddenSize();
        int pos = position();
        double[] x = row(t.get("wte.weight"), id, h);
        add(x, row(t.get("wpe.weight"), pos, h));
        for (int l = 0; l < c.numLayers(); l++) {
            String p = "h." + l + ".";
            double[] n1 = layerNorm(x, p + "ln_1");
            double[] qkv = conv1d(p + "attn.c_attn", n1);
            double[] q = slice(qkv, 0, h);
            double[] k = slice(qkv, h, 2 * h);
            double[] v = slice(qkv, 2 * h, 3 * h);
            add(x, conv1d(p + "attn.c_proj", attend(l, q, k, v)));
            double[] f = conv1d(p + "mlp.c_fc", layerNorm(x, p + "ln_2"));
            for (int i = 0; i < f.length; i++) {
                double z = f[i];
                f[i] = 0.5 * z * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (z + 0.044715 * z * z * z)));
            }
            add(x, conv1d(p + "mlp.c_proj", f));
        }
        double[] out = layerNorm(x, "ln_f");
        float[] head = t.containsKey("lm_head.weight") ? t.get("lm_head.weight") : t.get("wte.weight");
        return rowsDot(head, c.vocabSize(), out);
    }

    /** Causal attention of the new token over all cached positions (including itself). */
    private double[] attend(int layer, double[] q, double[] k, double[] v) {
        keys.get(layer).add(k);
        values.get(layer).add(v);
        int d = c.headDim();
        int group = c.numHeads() / c.numKvHeads();
        int len = keys.get(layer).size();
        double[] out = new double[c.numHeads() * d];
        for (int head = 0; head < c.numHeads(); head++) {
            int kvHead = head / group;
            double[] scores = new double[len];
            double max = Double.NEGATIVE_INFINITY;
            for (int s = 0; s < len; s++) {
                double[] ks = keys.get(layer).get(s);
                double dot = 0;
                for (int j = 0; j < d; j++) {
                    dot += q[head * d + j] * ks[kvHead * d + j];
                }
                scores[s] = dot / Math.sqrt(d);
                max = Math.max(max, scores[s]);
            }
            double sum = 0;
            for (int s = 0; s < len; s++) {
                scores[s] = Math.exp(scores[s] - max);
                sum += scores[s];
            }
            for (int s = 0; s < len; s++) {
                double[] vs = values.get(layer).get(s);
                for (int j = 0; j < d; j++) {
                    out[head * d + j] += scores[s] / sum * vs[kvHead * d + j];
                }
            }
        }
        return out;
    }

    /** Rotates each head's pairs (j, j + d/2) by pos * (scaled) theta^(-2j/d). */
    private void rope(double[] x, int heads, int d, int pos) {
        for (int head = 0; head < heads; head++) {
            for (int j = 0; j < d / 2; j++) {
                double angle = pos * frequency(j, d);
                int a = head * d + j;
                int b = a + d / 2;
                double x1 = x[a];
                double x2 = x[b];
                x[a] = x1 * Math.cos(angle) - x2 * Math.sin(angle);
                x[b] = x2 * Math.cos(angle) + x1 * Math.sin(angle);
            }
        }
    }

    /**
     * theta^(-2j/d), scaled: linear divides it by the factor; llama3 as Meta's reference {@code apply_scaling}
     * words it per wavelength (2 pi / frequency): shorter than original/high_freq_factor kept, longer than
     * original/low_freq_factor divided by the factor, between them a linear blend of the two weighted by
     * (original / wavelength - low) / (high - low).
     */
    private double frequency(int j, int d) {
        double freq = Math.pow(c.ropeTheta(), -2.0 * j / d);
        RopeScaling s = c.ropeScaling();
        if (s == null) {
            return freq;
        }
        if (s.type().equals(RopeScaling.LINEAR)) {
            return freq / s.factor();
        }
        double wavelength = 2 * Math.PI / freq;
        if (wavelength < s.originalMaxPositions() / s.highFreqFactor()) {
            return freq;
        }
        if (wavelength > s.originalMaxPositions() / s.lowFreqFactor()) {
            return freq / s.factor();
        }
        double smooth = (s.originalMaxPositions() / wavelength - s.lowFreqFactor()) / (s.highFreqFactor() - s.lowFreqFactor());
        return (1 - smooth) * freq / s.factor() + smooth * freq;
    }

    private double[] rms(double[] x, float[] w) {
        double ss = 0;
        for (double v : x) {
            ss += v * v;
        }
        double inv = 1 / Math.sqrt(ss / x.length + c.normEps());
        double[] out = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = x[i] * inv * w[i];
        }
        return out;
    }

    private double[] layerNorm(double[] x, String prefix) {
        float[] g = t.get(prefix + ".weight");
        float[] b = t.get(prefix + ".bias");
        double mean = 0;
        for (double v : x) {
            mean += v;
        }
        mean /= x.length;
        double var = 0;
        for (double v : x) {
            var += (v - mean) * (v - mean);
        }
        var /= x.length;
        double inv = 1 / Math.sqrt(var + c.normEps());
        double[] out = new double[x.length];
        for (int i = 0; i < x.length; i++) {
            out[i] = (x[i] - mean) * inv * g[i] + b[i];
        }
        return out;
    }

    /** nn.Linear: weight [out, in], optional bias. */
    private double[] matVec(String prefix, double[] x) {
        float[] w = t.get(prefix + ".weight");
        int out = w.length / x.length;
        double[] y = rowsDot(w, out, input(prefix + ".weight", x));
        float[] b = t.get(prefix + ".bias");
        if (b != null) {
            for (int i = 0; i < out; i++) {
                y[i] += b[i];
            }
        }
        return y;
    }

    /** GPT-2 Conv1D: weight [in, out], bias [out]. */
    private double[] conv1d(String prefix, double[] x) {
        float[] w = t.get(prefix + ".weight");
        float[] b = t.get(prefix + ".bias");
        int out = b.length;
        double[] y = new double[out];
        for (int i = 0; i < x.length; i++) {
            for (int o = 0; o < out; o++) {
                y[o] += x[i] * w[i * out + o];
            }
        }
        for (int o = 0; o < out; o++) {
            y[o] += b[o];
        }
        return y;
    }

    private static double[] rowsDot(float[] w, int rows, double[] x) {
        double[] y = new double[rows];
        for (int r = 0; r < rows; r++) {
            double s = 0;
            for (int i = 0; i < x.length; i++) {
                s += w[r * x.length + i] * x[i];
            }
            y[r] = s;
        }
        return y;
    }

    private static double[] row(float[] table, int r, int width) {
        double[] out = new double[width];
        for (int i = 0; i < width; i++) {
            out[i] = table[r * width + i];
        }
        return out;
    }

    private static double[] slice(double[] x, int from, int to) {
        double[] out = new double[to - from];
        System.arraycopy(x, from, out, 0, out.length);
        return out;
    }

    private static void add(double[] x, double[] y) {
        for (int i = 0; i < x.length; i++) {
            x[i] += y[i];
        }
    }
}
