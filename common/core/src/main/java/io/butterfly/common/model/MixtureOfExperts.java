package io.butterfly.common.model;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * The sparse MLP of a mixture-of-experts Llama-family model (docs/models.md): in a sparse layer a router
 * ({@code gate}, {@code [experts, hidden]}) scores every expert, a softmax over all of them in float32 gives their
 * weights, the {@code perToken} heaviest (ties: the lower expert index first) each run a SiLU-gated MLP of width
 * {@code expertSize} on the token, and their outputs are summed weighted, the weights first divided by their sum when
 * {@code normalizeTopK}. Qwen2-MoE adds a shared expert every token runs, scaled by {@code sigmoid(shared_expert_gate x)}.
 * A layer that is not sparse ({@link #sparse(int)}) has the dense MLP of the config's {@code intermediate_size}.
 *
 * @param kind             which checkpoint layout and config fields
 * @param experts          experts per sparse layer
 * @param perToken         experts each token visits ({@code num_experts_per_tok})
 * @param expertSize       an expert's MLP width
 * @param sharedExpertSize the shared expert's MLP width, 0 without one
 * @param normalizeTopK    whether the chosen weights are divided by their sum
 * @param sparseStep       every {@code sparseStep}-th layer is sparse ({@code decoder_sparse_step})
 * @param denseLayers      layers with the dense MLP whatever the step ({@code mlp_only_layers})
 */
public record MixtureOfExperts(Kind kind, int experts, int perToken, int expertSize, int sharedExpertSize,
                               boolean normalizeTopK, int sparseStep, List<Integer> denseLayers) {

    /** The mixture-of-experts families, by Hugging Face {@code model_type}. */
    public enum Kind {
        /** {@code MixtralForCausalLM}: {@code block_sparse_moe}, experts' w1 (gate), w3 (up), w2 (down); always renormalized. */
        MIXTRAL("mixtral", "MixtralForCausalLM", "block_sparse_moe.", "w1", "w3", "w2"),
        /** {@code Qwen2MoeForCausalLM}: a shared expert with a sigmoid gate beside the routed ones. */
        QWEN2_MOE("qwen2_moe", "Qwen2MoeForCausalLM", "mlp.", "gate_proj", "up_proj", "down_proj"),
        /** {@code Qwen3MoeForCausalLM}: routed experts only, with Qwen3's q/k norms in attention. */
        QWEN3_MOE("qwen3_moe", "Qwen3MoeForCausalLM", "mlp.", "gate_proj", "up_proj", "down_proj");

        private final String modelType;
        private final String architecture;
        private final String block;
        private final String[] projections;

        Kind(String modelType, String architecture, String block, String gate, String up, String down) {
            this.modelType = modelType;
            this.architecture = architecture;
            this.block = block;
            this.projections = new String[]{gate, up, down};
        }

        public String modelType() {
            return modelType;
        }

        public String architecture() {
            return architecture;
        }

        static Kind ofModelType(String modelType) {
            for (Kind k : values()) {
                if (k.modelType.equals(modelType.toLowerCase(Locale.ROOT))) {
                    return k;
                }
            }
            return null;
        }
    }

    public MixtureOfExperts {
        if (kind == null) {
            throw new IllegalArgumentException("a mixture of experts needs its kind");
        }
        if (experts <= 0 || perToken <= 0 || perToken > experts) {
            throw new IllegalArgumentException("experts per token must be between 1 and the experts (" + experts
                    + "), was " + perToken);
        }
        if (expertSize <= 0 || sharedExpertSize < 0 || sparseStep <= 0) {
            throw new IllegalArgumentException("the expert width " + expertSize + " and sparse step " + sparseStep
                    + " must be positive, the shared expert's width " + sharedExpertSize + " not negative");
        }
        if ((kind == Kind.QWEN2_MOE) != (sharedExpertSize > 0)) {
            throw new IllegalArgumentException("Qwen2-MoE, and only it, has a shared expert: shared_expert_intermediate_size "
                    + sharedExpertSize);
        }
        if (kind == Kind.MIXTRAL && (!normalizeTopK || sparseStep != 1 || !denseLayers.isEmpty())) {
            throw new IllegalArgumentException("Mixtral renormalizes the chosen weights and has experts in every layer");
        }
        denseLayers = List.copyOf(denseLayers);
    }

    /**
     * The experts of a {@code config.json} whose {@code model_type} is a mixture of experts, or null for a dense one.
     *
     * @throws IllegalArgumentException naming the field when one is missing, of another type or out of range
     */
    static MixtureOfExperts parse(String modelType, JsonNode n) {
        Kind kind = Kind.ofModelType(modelType);
        if (kind == null) {
            return null;
        }
        if (kind == Kind.MIXTRAL) {
            return new MixtureOfExperts(kind, ConfigFields.integer(n, "num_local_experts", 8),
                    ConfigFields.integer(n, "num_experts_per_tok", 2), ConfigFields.integer(n, "intermediate_size", 0),
                    0, true, 1, List.of());
        }
        List<Integer> dense = new ArrayList<>();
        JsonNode only = n.get("mlp_only_layers");
        if (only != null && only.isArray()) {
            for (int i = 0; i < only.size(); i++) {
                dense.add(ConfigFields.integer(only, i, "mlp_only_layers"));
            }
        } else if (!ConfigFields.absent(only)) {
            throw new IllegalArgumentException("config.json field 'mlp_only_layers' must be a list of layers");
        }
        int experts = ConfigFields.integer(n, "num_experts", kind == Kind.QWEN2_MOE ? 60 : 128);
        if (experts <= 0) {
            throw new IllegalArgumentException("num_experts " + experts + " is not supported: a "
                    + kind.modelType + " model needs experts (a dense model is a qwen2 or qwen3 one)");
        }
        return new MixtureOfExperts(kind, experts,
                ConfigFields.integer(n, "num_experts_per_tok", kind == Kind.QWEN2_MOE ? 4 : 8),
                ConfigFields.integer(n, "moe_intermediate_size", kind == Kind.QWEN2_MOE ? 1408 : 768),
                kind == Kind.QWEN2_MOE ? ConfigFields.integer(n, "shared_expert_intermediate_size", 5632) : 0,
                ConfigFields.bool(n, "norm_topk_prob", false), ConfigFields.integer(n, "decoder_sparse_step", 1),
                dense);
    }

    /** Whether {@code layer} routes through experts (transformers' condition); otherwise its MLP is dense. */
    public boolean sparse(int layer) {
        return !denseLayers.contains(layer) && (layer + 1) % sparseStep == 0;
    }

    public boolean hasSharedExpert() {
        return sharedExpertSize > 0;
    }

    /** The router's weight {@code [experts, hidden]} of layer {@code layer}. */
    public String router(int layer) {
        return block(layer) + "gate.weight";
    }

    /** Expert {@code e}'s gate, up and down weights in layer {@code layer}. */
    public String[] expert(int layer, int e) {
        String p = block(layer) + "experts." + e + ".";
        return new String[]{p + kind.projections[0] + ".weight", p + kind.projections[1] + ".weight",
            p + kind.projections[2] + ".weight"};
    }

    /** The shared expert's gate, up and down weights (Qwen2-MoE). */
    public String[] sharedExpert(int layer) {
        String p = block(layer) + "shared_expert.";
        return new String[]{p + "gate_proj.weight", p + "up_proj.weight", p + "down_proj.weight"};
    }

    /** The shared expert's gate {@code [1, hidden]} (Qwen2-MoE). */
    public String sharedExpertGate(int layer) {
        return block(layer) + "shared_expert_gate.weight";
    }

    private String block(int layer) {
        return "model.layers." + layer + "." + kind.block;
    }

    /** Parameters of a sparse layer's MLP: router, experts and the shared expert with its gate. */
    long sparseParameters(long hidden) {
        long shared = hasSharedExpert() ? 3 * hidden * sharedExpertSize + hidden : 0;
        return experts * hidden + (long) experts * 3 * hidden * expertSize + shared;
    }

    /** The {@code config.json} fields of these experts. */
    void writeTo(Map<String, Object> m) {
        if (kind == Kind.MIXTRAL) {
            m.put("num_local_experts", experts);
            m.put("num_experts_per_tok", perToken);
            return;
        }
        m.put("num_experts", experts);
        m.put("num_experts_per_tok", perToken);
        m.put("moe_intermediate_size", expertSize);
        if (hasSharedExpert()) {
            m.put("shared_expert_intermediate_size", sharedExpertSize);
            m.put("qkv_bias", true); // Qwen2-MoE's q/k/v projections have biases (transformers' default)
        }
        m.put("norm_topk_prob", normalizeTopK);
        m.put("decoder_sparse_step", sparseStep);
        m.put("mlp_only_layers", denseLayers);
    }
}
