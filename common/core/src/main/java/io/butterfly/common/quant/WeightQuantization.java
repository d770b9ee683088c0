package io.butterfly.common.quant;

import io.butterfly.common.model.ModelConfig;
import java.util.Arrays;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How the registry quantizes a Llama-family model on import ({@code --quantize}), choosing each tensor's type as
 * llama.cpp's {@code llama-quantize} does for the matching file type:
 * <ul>
 *   <li>{@code q8} (llama.cpp's Q8_0): every matrix (projections, token embedding, LM head) in Q8_0;</li>
 *   <li>{@code q4} (Q4_0): projections and token embedding in Q4_0, the LM head in Q6_K (llama.cpp keeps the output
 *       tensor at 6 bits for every type below 8: it is the most sensitive matrix);</li>
 *   <li>{@code q4_k} (Q4_K_M): projections and token embedding in Q4_K; the LM head, and the value and down projections
 *       of the first and last eighth of the layers and of every third layer between (llama.cpp's
 *       {@code use_more_bits}), in Q6_K.</li>
 * </ul>
 * Vectors (norms, biases) stay as they are (float32 math needs them exact; they are a fraction of a percent of the
 * bytes). With tied embeddings the token embedding is the LM head too, and gets the head's type. A matrix whose rows
 * are no whole number of blocks falls back to Q8_0, or stays as it is if not even that fits (llama.cpp's fallback).
 */
public enum WeightQuantization {
    Q8(GgmlType.Q8_0, GgmlType.Q8_0),
    Q4(GgmlType.Q4_0, GgmlType.Q6_K),
    Q4_K(GgmlType.Q4_K, GgmlType.Q6_K);

    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");

    private final GgmlType matrices;
    private final GgmlType head;

    WeightQuantization(GgmlType matrices, GgmlType head) {
        this.matrices = matrices;
        this.head = head;
    }

    /** The option's name ({@code q8}, {@code q4}, {@code q4_k}). */
    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static Optional<WeightQuantization> byId(String id) {
        return Arrays.stream(values()).filter(q -> q.id().equalsIgnoreCase(id.trim())).findFirst();
    }

    /** The type the tensor is stored in, or empty to keep it as it is. */
    public Optional<GgmlType> typeOf(String name, long[] shape, ModelConfig config) {
        if (shape.length != 2) {
            return Optional.empty();
        }
        boolean isHead = name.equals("lm_head.weight")
                || (config.tieWordEmbeddings() && name.equals("model.embed_tokens.weight"));
        GgmlType wanted = isHead ? head : matrices;
        if (this == Q4_K && moreBits(name, config.numLayers())) {
            wanted = GgmlType.Q6_K;
        }
        for (GgmlType t : new GgmlType[]{wanted, GgmlType.Q8_0}) {
            if (shape[1] % t.blockSize() == 0) {
                return Optional.of(t);
            }
        }
        return Optional.empty();
    }

    /** llama.cpp's {@code use_more_bits} for Q4_K_M's value and down projections. */
    private static boolean moreBits(String name, int layers) {
        Matcher m = LAYER.matcher(name);
        if (!m.matches() || !(m.group(2).equals("self_attn.v_proj.weight") || m.group(2).equals("mlp.down_proj.weight"))) {
            return false;
        }
        int i = Integer.parseInt(m.group(1));
        return i < layers / 8 || i >= 7 * layers / 8 || (i - layers / 8) % 3 == 2;
    }
}
