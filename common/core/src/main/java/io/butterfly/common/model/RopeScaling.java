package io.butterfly.common.model;

import java.util.LinkedHashMap;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * A Llama-family config's {@code rope_scaling}: how the rotary inverse frequencies are changed from plain
 * {@code 1 / theta^(2j/d)}, as transformers' {@code modeling_rope_utils} does at model load. Two kinds are
 * supported: {@code linear} (every frequency divided by {@code factor}) and {@code llama3} (Llama 3.1 and
 * later: long wavelengths divided by {@code factor}, short ones kept, the band between interpolated). Kinds
 * that depend on the sequence length or scale attention ({@code dynamic}, {@code yarn}, {@code longrope}) are
 * refused: running them as plain RoPE would give wrong logits.
 *
 * @param type                 {@code linear} or {@code llama3}
 * @param factor               the scaling factor (&gt; 0)
 * @param lowFreqFactor        llama3: wavelengths above {@code originalMaxPositions / lowFreqFactor} are scaled
 * @param highFreqFactor       llama3: wavelengths below {@code originalMaxPositions / highFreqFactor} are kept
 * @param originalMaxPositions llama3: the context length the model was pre-trained with
 */
public record RopeScaling(String type, double factor, double lowFreqFactor, double highFreqFactor,
                          int originalMaxPositions) {

    public static final String LINEAR = "linear";
    public static final String LLAMA3 = "llama3";

    public RopeScaling {
        if (!LINEAR.equals(type) && !LLAMA3.equals(type)) {
            throw new IllegalArgumentException("rope_scaling type '" + type + "' is not supported (linear, llama3)");
        }
        if (!(factor > 0) || Double.isInfinite(factor)) {
            throw new IllegalArgumentException("rope_scaling factor must be a positive number, was " + factor);
        }
        if (LLAMA3.equals(type) && !(lowFreqFactor > 0 && highFreqFactor > lowFreqFactor && originalMaxPositions > 0)) {
            throw new IllegalArgumentException("llama3 rope_scaling needs 0 < low_freq_factor < high_freq_factor and a"
                    + " positive original_max_position_embeddings, got low_freq_factor " + lowFreqFactor
                    + ", high_freq_factor " + highFreqFactor + ", original_max_position_embeddings "
                    + originalMaxPositions);
        }
    }

    public static RopeScaling linear(double factor) {
        return new RopeScaling(LINEAR, factor, 0, 0, 0);
    }

    public static RopeScaling llama3(double factor, double lowFreqFactor, double highFreqFactor, int originalMaxPositions) {
        return new RopeScaling(LLAMA3, factor, lowFreqFactor, highFreqFactor, originalMaxPositions);
    }

    /**
     * The scaling a config's {@code rope_scaling} (transformers 4) or {@code rope_parameters} (transformers 5)
     * object names; null for none or {@code default}.
     */
    static RopeScaling parse(JsonNode node) {
        if (ConfigFields.absent(node)) {
            return null;
        }
        if (!node.isObject()) {
            throw new IllegalArgumentException("rope_scaling must be an object, not " + node);
        }
        String type = ConfigFields.string(node, "rope_type", ConfigFields.string(node, "type", "default"));
        switch (type) {
            case "default" -> {
                return null;
            }
            case LINEAR -> {
                return linear(required(node, "factor"));
            }
            case LLAMA3 -> {
                return llama3(required(node, "factor"), required(node, "low_freq_factor"),
                        required(node, "high_freq_factor"),
                        ConfigFields.integer(node, "original_max_position_embeddings", 0));
            }
            default -> throw new IllegalArgumentException("rope_scaling " + node + " is not supported: only linear and"
                    + " llama3 scaling are (" + type + " depends on the sequence length or scales attention)");
        }
    }

    private static double required(JsonNode node, String field) {
        JsonNode v = node.get(field);
        if (v == null || !v.isNumber() || !Double.isFinite(v.doubleValue())) {
            throw new IllegalArgumentException("rope_scaling " + node + " needs a finite number '" + field + "'");
        }
        return v.doubleValue();
    }

    /**
     * The scaled inverse frequencies, in float32 operation by operation as transformers computes them on its
     * float32 {@code inv_freq} tensor (so the same tables result).
     */
    public float[] apply(float[] invFreq) {
        float f = (float) factor;
        float[] out = new float[invFreq.length];
        if (LINEAR.equals(type)) {
            for (int j = 0; j < out.length; j++) {
                out[j] = invFreq[j] / f;
            }
            return out;
        }
        float low = (float) lowFreqFactor;
        float span = (float) (highFreqFactor - lowFreqFactor);
        float old = (float) originalMaxPositions;
        float lowFreqWavelen = (float) (originalMaxPositions / lowFreqFactor);
        float highFreqWavelen = (float) (originalMaxPositions / highFreqFactor);
        float twoPi = (float) (2 * Math.PI);
        for (int j = 0; j < out.length; j++) {
            float inv = invFreq[j];
            float wavelen = twoPi / inv;
            float scaled = wavelen > lowFreqWavelen ? inv / f : inv;
            boolean medium = !(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen);
            if (medium) {
                float smooth = (old / wavelen - low) / span;
                scaled = (1 - smooth) * scaled / f + smooth * scaled;
            }
            out[j] = scaled;
        }
        return out;
    }

    /** The {@code rope_scaling} object of a Hugging Face config.json. */
    Map<String, Object> toHuggingFace() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("rope_type", type);
        m.put("factor", factor);
        if (LLAMA3.equals(type)) {
            m.put("low_freq_factor", lowFreqFactor);
            m.put("high_freq_factor", highFreqFactor);
            m.put("original_max_position_embeddings", originalMaxPositions);
        }
        return m;
    }
}
