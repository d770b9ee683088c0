package io.butterfly.cli.bench;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.GgmlType;
import io.butterfly.common.quant.WeightQuantization;

/**
 * What a model's decode and prefill cannot beat on one worker holding the whole model (the roofline): a decode step
 * of one sequence reads every weight once, so it takes at least its bytes over the memory's read bandwidth; a prefill
 * does its multiply-adds at best at the engine's matmul rate.
 *
 * @param config       the model
 * @param weightBytes  bytes of a projection weight as the worker holds it (4 for float32, 2 for F16/BF16); norms,
 *                     biases, embeddings and the KV cache are float32
 * @param quantization when not null, the matrices are held in the types it gives them (Q8_0, Q4_0, ...) instead
 */
record Roofline(ModelConfig config, int weightBytes, WeightQuantization quantization) {

    Roofline(ModelConfig config, int weightBytes) {
        this(config, weightBytes, null);
    }

    /**
     * Bytes one decode step of one sequence reads with {@code context} positions cached (its own included): every
     * projection matrix and the LM head, the layers' norms and biases, one embedding row, and the cached keys and
     * values.
     */
    long decodeBytes(int context) {
        long h = config.hiddenSize();
        long vectors = config.numLayers() * layerVectors() + h * (config.architecture() == Architecture.GPT2 ? 4 : 2);
        long kv = 2L * config.numLayers() * config.kvDim() * context;
        return matrixBytes() + (vectors + kv) * Float.BYTES;
    }

    /** Bytes of every layer's projection matrices and the LM head as the worker holds them. */
    private long matrixBytes() {
        long h = config.hiddenSize();
        if (quantization == null) {
            return (config.numLayers() * layerMatrixWeights() + (long) config.vocabSize() * h) * weightBytes;
        }
        long q = (long) config.numHeads() * config.headDim();
        long inter = config.intermediateSize();
        String[] names = {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
            "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"};
        long[][] shapes = {{q, h}, {config.kvDim(), h}, {config.kvDim(), h}, {h, q}, {inter, h}, {inter, h}, {h, inter}};
        long bytes = 0;
        for (int l = 0; l < config.numLayers(); l++) {
            for (int m = 0; m < names.length; m++) {
                bytes += held("model.layers." + l + "." + names[m] + ".weight", shapes[m]);
            }
        }
        String head = config.tieWordEmbeddings() ? "model.embed_tokens.weight" : "lm_head.weight";
        return bytes + held(head, new long[]{config.vocabSize(), h});
    }

    private long held(String name, long[] shape) {
        GgmlType type = quantization.typeOf(name, shape, config).orElse(GgmlType.F32);
        return shape[0] * type.rowBytes(shape[1]);
    }

    /**
     * Floating-point operations (a multiply-add is two) of a prefill of {@code n} tokens: every layer's projections
     * on every token, causal attention (token t against t + 1 keys, scores and weighted values), and the LM head on
     * the last token only.
     */
    double prefillFlops(int n) {
        double qDim = (double) config.numHeads() * config.headDim();
        double attention = 2.0 * qDim * n * (n + 1.0) * config.numLayers();
        return 2.0 * n * config.numLayers() * layerMatrixWeights() + attention + 2.0 * config.vocabSize() * config.hiddenSize();
    }

    /** Decode tokens/s the read bandwidth allows, at {@code context} cached positions. */
    double decodeBound(double readGbps, int context) {
        return readGbps * 1e9 / decodeBytes(context);
    }

    /** Prefill tokens/s of an {@code n}-token prompt the matmul rate allows. */
    double prefillBound(double matmulGflops, int n) {
        return matmulGflops * 1e9 * n / prefillFlops(n);
    }

    /** Weights of one layer's projection matrices. */
    private long layerMatrixWeights() {
        long h = config.hiddenSize();
        long inter = config.intermediateSize();
        if (config.architecture() == Architecture.GPT2) {
            return 4 * h * h + 2 * h * inter;
        }
        long q = (long) config.numHeads() * config.headDim();
        return h * (q + 2L * config.kvDim()) + q * h + 3 * h * inter;
    }

    /** One layer's norm weights and biases (float32). */
    private long layerVectors() {
        long h = config.hiddenSize();
        return config.architecture() == Architecture.GPT2 ? 4 * h + 3 * h + h + config.intermediateSize() + h : 2 * h;
    }
}
