package io.butterfly.common.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The hyper-parameters of a model, read from (and written as) a Hugging Face {@code config.json}.
 *
 * @param architecture     model family
 * @param numLayers        transformer blocks
 * @param hiddenSize       model width
 * @param numHeads         attention (query) heads
 * @param numKvHeads       key/value heads (grouped-query attention; equals numHeads for GPT-2)
 * @param intermediateSize MLP width
 * @param vocabSize        vocabulary size
 * @param maxPositions     longest sequence (positions) supported
 * @param normEps          RMSNorm / LayerNorm epsilon
 * @param ropeTheta        rotary base (Llama only)
 * @param tieWordEmbeddings whether the LM head reuses the token embedding matrix
 * @param bosTokenId       beginning-of-sequence token, or -1
 * @param eosTokenId       end-of-sequence token, or -1
 * @param ropeScaling      how the rotary frequencies are scaled (Llama only), or null for plain RoPE
 * @param moreEosTokenIds  further tokens that end a sequence, when {@code eos_token_id} is a list (Llama 3 instruct
 *                         models end a turn with {@code <|eot_id|>}, listed after {@code <|end_of_text|>})
 * @param qkNorm           Qwen3's RMSNorm of each query and key head (weights {@code [headDim]}) before the rotary
 *                         embedding (Llama family only)
 * @param experts          the sparse MLP of a mixture-of-experts model, or null for a dense one (Llama family only)
 */
public record ModelConfig(
        Architecture architecture,
        int numLayers,
        int hiddenSize,
        int numHeads,
        int numKvHeads,
        int intermediateSize,
        int vocabSize,
        int maxPositions,
        double normEps,
        double ropeTheta,
        boolean tieWordEmbeddings,
        int bosTokenId,
        int eosTokenId,
        RopeScaling ropeScaling,
        List<Integer> moreEosTokenIds,
        boolean qkNorm,
        MixtureOfExperts experts) {

    private static final ObjectMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

    public ModelConfig {
        if (numLayers <= 0 || hiddenSize <= 0 || numHeads <= 0 || numKvHeads <= 0 || vocabSize <= 0) {
            throw new IllegalArgumentException("layers, hidden size, heads, kv heads and vocab must be positive");
        }
        if (hiddenSize % numHeads != 0) {
            throw new IllegalArgumentException("hidden size " + hiddenSize + " is not divisible by heads " + numHeads);
        }
        if (numHeads % numKvHeads != 0) {
            throw new IllegalArgumentException("heads " + numHeads + " are not divisible by kv heads " + numKvHeads);
        }
        if (intermediateSize <= 0 || maxPositions <= 0) {
            throw new IllegalArgumentException("intermediate size " + intermediateSize + " and positions " + maxPositions
                    + " must be positive");
        }
        if (!(normEps > 0) || Double.isInfinite(normEps)) {
            throw new IllegalArgumentException("the norm epsilon must be a positive number, was " + normEps);
        }
        if (architecture == Architecture.LLAMA && (!(ropeTheta > 0) || Double.isInfinite(ropeTheta))) {
            throw new IllegalArgumentException("rope_theta must be a positive number, was " + ropeTheta);
        }
        moreEosTokenIds = moreEosTokenIds == null ? List.of() : List.copyOf(moreEosTokenIds);
        if (!moreEosTokenIds.isEmpty() && (eosTokenId < 0 || moreEosTokenIds.stream().anyMatch(id -> id < 0))) {
            throw new IllegalArgumentException("end-of-sequence tokens must not be negative, and further ones need a first: "
                    + eosTokenId + " " + moreEosTokenIds);
        }
        if (architecture != Architecture.LLAMA && (qkNorm || experts != null)) {
            throw new IllegalArgumentException("q/k norms and experts are Llama-family parts");
        }
        if (experts != null && experts.kind() == MixtureOfExperts.Kind.MIXTRAL && experts.expertSize() != intermediateSize) {
            throw new IllegalArgumentException("a Mixtral expert's width is intermediate_size " + intermediateSize);
        }
        if (experts != null && (experts.kind() == MixtureOfExperts.Kind.QWEN3_MOE) != qkNorm) {
            throw new IllegalArgumentException("Qwen3-MoE, and no other mixture of experts, has q/k norms");
        }
    }

    /** A dense configuration without q/k norms (Llama, Qwen2, Mistral, GPT-2). */
    public ModelConfig(Architecture architecture, int numLayers, int hiddenSize, int numHeads, int numKvHeads,
                       int intermediateSize, int vocabSize, int maxPositions, double normEps, double ropeTheta,
                       boolean tieWordEmbeddings, int bosTokenId, int eosTokenId, RopeScaling ropeScaling,
                       List<Integer> moreEosTokenIds) {
        this(architecture, numLayers, hiddenSize, numHeads, numKvHeads, intermediateSize, vocabSize, maxPositions,
                normEps, ropeTheta, tieWordEmbeddings, bosTokenId, eosTokenId, ropeScaling, moreEosTokenIds, false, null);
    }

    /** A configuration with one end-of-sequence token (or none). */
    public ModelConfig(Architecture architecture, int numLayers, int hiddenSize, int numHeads, int numKvHeads,
                       int intermediateSize, int vocabSize, int maxPositions, double normEps, double ropeTheta,
                       boolean tieWordEmbeddings, int bosTokenId, int eosTokenId, RopeScaling ropeScaling) {
        this(architecture, numLayers, hiddenSize, numHeads, numKvHeads, intermediateSize, vocabSize, maxPositions,
                normEps, ropeTheta, tieWordEmbeddings, bosTokenId, eosTokenId, ropeScaling, List.of());
    }

    /** A configuration with plain RoPE (or none: GPT-2). */
    public ModelConfig(Architecture architecture, int numLayers, int hiddenSize, int numHeads, int numKvHeads,
                       int intermediateSize, int vocabSize, int maxPositions, double normEps, double ropeTheta,
                       boolean tieWordEmbeddings, int bosTokenId, int eosTokenId) {
        this(architecture, numLayers, hiddenSize, numHeads, numKvHeads, intermediateSize, vocabSize, maxPositions,
                normEps, ropeTheta, tieWordEmbeddings, bosTokenId, eosTokenId, null);
    }

    /** This configuration with {@code ids} as its end-of-sequence tokens (at least one), the first as eos_token_id. */
    public ModelConfig withEndOfSequence(List<Integer> ids) {
        if (ids.isEmpty()) {
            throw new IllegalArgumentException("at least one end-of-sequence token is needed");
        }
        return new ModelConfig(architecture, numLayers, hiddenSize, numHeads, numKvHeads, intermediateSize, vocabSize,
                maxPositions, normEps, ropeTheta, tieWordEmbeddings, bosTokenId, ids.get(0), ropeScaling,
                ids.subList(1, ids.size()), qkNorm, experts);
    }

    /** This configuration with {@code experts} (null: dense), q/k norms as a model of their kind has them. */
    public ModelConfig withExperts(MixtureOfExperts experts) {
        return withQkNormAndExperts(experts != null && experts.kind() == MixtureOfExperts.Kind.QWEN3_MOE, experts);
    }

    /** This configuration with Qwen3's q/k norms and {@code experts} (null: dense). */
    public ModelConfig withQkNormAndExperts(boolean qkNorm, MixtureOfExperts experts) {
        return new ModelConfig(architecture, numLayers, hiddenSize, numHeads, numKvHeads, intermediateSize, vocabSize,
                maxPositions, normEps, ropeTheta, tieWordEmbeddings, bosTokenId, eosTokenId, ropeScaling,
                moreEosTokenIds, qkNorm, experts);
    }

    /** Whether generating {@code token} ends the sequence: the end-of-sequence token or any other the config lists. */
    public boolean endsSequence(long token) {
        return token >= 0 && (token == eosTokenId || token <= Integer.MAX_VALUE && moreEosTokenIds.contains((int) token));
    }

    public int headDim() {
        return hiddenSize / numHeads;
    }

    public int kvDim() {
        return numKvHeads * headDim();
    }

    public static ModelConfig read(Path configJson) throws IOException {
        return parse(Files.readAllBytes(configJson));
    }

    /**
     * Reads a {@code config.json}.
     *
     * @throws IllegalArgumentException naming the field when it is not JSON, not an object, a field has another JSON
     *                                  type than the one it must have, or it asks for a model the stages do not
     *                                  compute; nothing else
     */
    public static ModelConfig parse(byte[] json) {
        JsonNode n;
        try {
            n = JSON.readTree(json);
        } catch (JacksonException e) {
            throw new IllegalArgumentException("config.json is not JSON: " + e.getOriginalMessage());
        }
        if (n == null || !n.isObject()) {
            throw new IllegalArgumentException("config.json is not a JSON object");
        }
        String modelType = ConfigFields.string(n, "model_type", "llama");
        Architecture arch = Architecture.fromModelType(modelType);
        requireComputable(n, arch);
        if (arch == Architecture.GPT2) {
            int hidden = ConfigFields.integer(n, "n_embd", 0);
            int heads = ConfigFields.integer(n, "n_head", 0);
            // transformers' default MLP width is 4 * n_embd; a width an int cannot hold is refused as not positive
            long inner = ConfigFields.absent(n.get("n_inner")) ? 4L * hidden : ConfigFields.integer(n, "n_inner", 0);
            return new ModelConfig(arch,
                    ConfigFields.integer(n, "n_layer", 0), hidden, heads, heads,
                    inner > Integer.MAX_VALUE ? -1 : (int) inner,
                    ConfigFields.integer(n, "vocab_size", 0), ConfigFields.integer(n, "n_positions", 1024),
                    ConfigFields.number(n, "layer_norm_epsilon", 1e-5), 0,
                    ConfigFields.bool(n, "tie_word_embeddings", true),
                    tokenId(n, "bos_token_id"), tokenId(n, "eos_token_id"), null, moreTokenIds(n, "eos_token_id"));
        }
        int heads = ConfigFields.integer(n, "num_attention_heads", 0);
        // transformers 5 names it rope_parameters (with rope_theta inside), transformers 4 rope_scaling.
        JsonNode ropeParameters = n.get("rope_parameters");
        boolean v5 = !ConfigFields.absent(ropeParameters);
        double theta = v5 && ropeParameters.has("rope_theta") ? ConfigFields.number(ropeParameters, "rope_theta", 0)
                : ConfigFields.number(n, "rope_theta", 10000.0);
        return new ModelConfig(arch,
                ConfigFields.integer(n, "num_hidden_layers", 0), ConfigFields.integer(n, "hidden_size", 0), heads,
                ConfigFields.integer(n, "num_key_value_heads", heads), ConfigFields.integer(n, "intermediate_size", 0),
                ConfigFields.integer(n, "vocab_size", 0), maxPositions(n),
                ConfigFields.number(n, "rms_norm_eps", 1e-6), theta,
                ConfigFields.bool(n, "tie_word_embeddings", false),
                tokenId(n, "bos_token_id"), tokenId(n, "eos_token_id"),
                RopeScaling.parse(v5 ? ropeParameters : n.get("rope_scaling")), moreTokenIds(n, "eos_token_id"),
                modelType.equals("qwen3") || modelType.equals("qwen3_moe"), MixtureOfExperts.parse(modelType, n));
    }

    /**
     * Refuses, by name, a config asking for math the stages do not compute, rather than running it as the plain
     * architecture: a GELU other than the tanh form GPT-2 uses, an MLP activation other than SiLU, or a head width
     * set apart from {@code hidden_size / num_attention_heads} (e.g. Mistral NeMo's 128 with 5120 / 32 = 160).
     */
    private static void requireComputable(JsonNode n, Architecture arch) {
        if (arch == Architecture.GPT2) {
            String act = ConfigFields.string(n, "activation_function", "gelu_new");
            if (!act.equals("gelu_new") && !act.equals("gelu_pytorch_tanh") && !act.equals("gelu_fast")) { // all tanh GELU
                throw new IllegalArgumentException("activation_function '" + act
                        + "' is not supported: GPT-2 stages compute gelu_new (the tanh approximation)");
            }
            if (ConfigFields.bool(n, "scale_attn_by_inverse_layer_idx", false) || !ConfigFields.bool(n, "scale_attn_weights", true)) {
                throw new IllegalArgumentException("scale_attn_by_inverse_layer_idx / scale_attn_weights=false are not"
                        + " supported: attention scores are scaled by 1/sqrt(head dim)");
            }
            return;
        }
        String act = ConfigFields.string(n, "hidden_act", "silu");
        if (!act.equals("silu") && !act.equals("swish")) { // transformers' two names for x * sigmoid(x)
            throw new IllegalArgumentException("hidden_act '" + act + "' is not supported: Llama-family stages compute SiLU");
        }
        int headDim = ConfigFields.integer(n, "head_dim", -1);
        int hidden = ConfigFields.integer(n, "hidden_size", 0);
        int heads = ConfigFields.integer(n, "num_attention_heads", 0);
        if (headDim != -1 && heads > 0 && headDim != hidden / heads) {
            throw new IllegalArgumentException("head_dim " + headDim + " is not supported: it must be hidden_size / "
                    + "num_attention_heads = " + hidden / heads);
        }
    }

    /**
     * Positions a Llama-family config can serve exactly. With a sliding window (Mistral), attention over at most
     * the window is the same as full attention, so the window caps the positions instead of being emulated.
     */
    private static int maxPositions(JsonNode n) {
        int positions = ConfigFields.integer(n, "max_position_embeddings", 2048);
        int window = ConfigFields.integer(n, "sliding_window", 0);
        boolean windowed = window > 0 && ConfigFields.bool(n, "use_sliding_window", true);
        return windowed ? Math.min(positions, window) : positions;
    }

    /** Hugging Face {@code config.json} contents for this configuration. */
    public Map<String, Object> toHuggingFace() {
        Map<String, Object> m = new LinkedHashMap<>();
        if (architecture == Architecture.GPT2) {
            m.put("architectures", List.of("GPT2LMHeadModel"));
            m.put("model_type", "gpt2");
            m.put("n_embd", hiddenSize);
            m.put("n_layer", numLayers);
            m.put("n_head", numHeads);
            m.put("n_inner", intermediateSize);
            m.put("n_positions", maxPositions);
            m.put("vocab_size", vocabSize);
            m.put("layer_norm_epsilon", normEps);
            m.put("activation_function", "gelu_new");
        } else {
            m.put("architectures", List.of(experts != null ? experts.kind().architecture()
                    : qkNorm ? "Qwen3ForCausalLM" : "LlamaForCausalLM"));
            m.put("model_type", experts != null ? experts.kind().modelType() : qkNorm ? "qwen3" : "llama");
            m.put("hidden_size", hiddenSize);
            m.put("num_hidden_layers", numLayers);
            m.put("num_attention_heads", numHeads);
            m.put("num_key_value_heads", numKvHeads);
            m.put("intermediate_size", intermediateSize);
            m.put("max_position_embeddings", maxPositions);
            m.put("vocab_size", vocabSize);
            m.put("rms_norm_eps", normEps);
            m.put("rope_theta", ropeTheta);
            if (ropeScaling != null) {
                m.put("rope_scaling", ropeScaling.toHuggingFace());
            }
            m.put("hidden_act", "silu");
            if (experts != null) {
                experts.writeTo(m);
            }
        }
        m.put("tie_word_embeddings", tieWordEmbeddings);
        if (bosTokenId >= 0) {
            m.put("bos_token_id", bosTokenId);
        }
        if (eosTokenId >= 0) {
            if (moreEosTokenIds.isEmpty()) {
                m.put("eos_token_id", eosTokenId);
            } else {
                List<Integer> all = new ArrayList<>(List.of(eosTokenId));
                all.addAll(moreEosTokenIds);
                m.put("eos_token_id", all);
            }
        }
        m.put("torch_dtype", "float32");
        return m;
    }

    public void write(Path configJson) throws IOException {
        Files.write(configJson, JSON.writeValueAsBytes(toHuggingFace()));
    }

    /** Parameter count, counting a tied LM head once. */
    public long parameterCount() {
        long h = hiddenSize;
        long embed = (long) vocabSize * h + (architecture == Architecture.GPT2 ? (long) maxPositions * h : 0);
        long head = tieWordEmbeddings ? 0 : (long) vocabSize * h;
        long perLayer;
        if (architecture == Architecture.GPT2) {
            perLayer = 4 * h                           // two LayerNorms
                    + h * 3 * h + 3 * h                // c_attn
                    + h * h + h                        // attn c_proj
                    + h * intermediateSize + intermediateSize   // c_fc
                    + (long) intermediateSize * h + h;  // mlp c_proj
            return embed + numLayers * perLayer + 2 * h + head;
        }
        long attention = 2 * h + h * h + 2 * h * kvDim() + h * h + (qkNorm ? 2L * headDim() : 0);
        long all = embed + h + head;
        for (int i = 0; i < numLayers; i++) {
            all += attention + (experts != null && experts.sparse(i) ? experts.sparseParameters(h)
                    : 3 * h * (long) intermediateSize);
        }
        return all;
    }

    /** The field's first token id (of a list, or the only one), or -1. */
    private static int tokenId(JsonNode n, String field) {
        List<Integer> ids = tokenIds(n, field);
        return ids.isEmpty() ? -1 : ids.get(0);
    }

    /** The field's token ids after the first. */
    private static List<Integer> moreTokenIds(JsonNode n, String field) {
        List<Integer> ids = tokenIds(n, field);
        return ids.isEmpty() ? ids : ids.subList(1, ids.size());
    }

    /** A token id field's ids: one number, a list of them, or none (absent or null). */
    private static List<Integer> tokenIds(JsonNode n, String field) {
        JsonNode v = n.get(field);
        List<Integer> ids = new ArrayList<>();
        if (v != null && v.isArray()) {
            for (int i = 0; i < v.size(); i++) {
                ids.add(ConfigFields.integer(v, i, field));
            }
        } else if (!ConfigFields.absent(v)) {
            ids.add(ConfigFields.integer(n, field, -1));
        }
        return ids;
    }
}
