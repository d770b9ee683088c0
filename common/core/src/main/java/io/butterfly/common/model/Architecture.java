package io.butterfly.common.model;

import java.util.Locale;

/** Model families Butterfly executes (docs/models.md). */
public enum Architecture {
    /**
     * Llama family: RMSNorm, rotary embeddings, grouped-query attention, SiLU-gated MLP (also Qwen2, Mistral, Qwen3 with
     * its q/k norms, and the mixtures of experts Mixtral, Qwen2-MoE and Qwen3-MoE: {@link MixtureOfExperts}).
     */
    LLAMA,
    /** GPT-2: LayerNorm, learned positions, Conv1D weight layout, GELU (tanh). */
    GPT2;

    /** Maps a Hugging Face {@code model_type} to an architecture. */
    public static Architecture fromModelType(String modelType) {
        return switch (modelType.toLowerCase(Locale.ROOT)) {
            case "llama", "qwen2", "mistral", "qwen3", "mixtral", "qwen2_moe", "qwen3_moe" -> LLAMA;
            case "gpt2" -> GPT2;
            default -> throw new IllegalArgumentException("unsupported model_type '" + modelType + "'");
        };
    }

    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static Architecture fromId(String id) {
        return valueOf(id.toUpperCase(Locale.ROOT));
    }
}
