package io.butterfly.common.model;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
        List<Integer> moreEosTokenIds) {

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
        moreEosTokenIds = moreEosTokenIds == null ? List.of() : List.copyOf(moreEosTokenIds);
        if (!moreEosTokenIds.isEmpty() && (eosTokenId < 0 || moreEosTokenIds.stream().anyMatch(id -> id < 0))) {
            throw new IllegalArgumentException("end-of-sequence tokens must not be negative, and further ones need a first: "
                    + eosTokenId + " " + moreEosTokenIds);
        }
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
                ids.subList(1, ids.size()));
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

    public static ModelConfig parse(byte[] json) {
        JsonNode n = JSON.readTree(json);
        Architecture arch = Architecture.fromModelType(text(n, "model_type", "llama"));
        requireComputable(n, arch);
        if (arch == Architecture.GPT2) {
            int hidden = n.path("n_embd").asInt();
            JsonNode inner = n.get("n_inner");
            return new ModelConfig(arch,
                    n.path("n_layer").asInt(), hidden, n.path("n_head").asInt(), n.path("n_head").asInt(),
                    inner == null || inner.isNull() ? 4 * hidden : inner.asInt(),
                    n.path("vocab_size").asInt(), n.path("n_positions").asInt(1024),
                    n.path("layer_norm_epsilon").asDouble(1e-5), 0,
                    n.path("tie_word_embeddings").asBoolean(true),
                    tokenId(n, "bos_token_id"), tokenId(n, "eos_token_id"), null, moreTokenIds(n, "eos_token_id"));
        }
        int heads = n.path("num_attention_heads").asInt();
        // transformers 5 names it rope_parameters (with rope_theta inside), transformers 4 rope_scaling.
        JsonNode ropeParameters = n.get("rope_parameters");
        boolean v5 = ropeParameters != null && !ropeParameters.isNull();
        double theta = v5 && ropeParameters.has("rope_theta") ? ropeParameters.path("rope_theta").asDouble()
                : n.path("rope_theta").asDouble(10000.0);
        return new ModelConfig(arch,
                n.path("num_hidden_layers").asInt(), n.path("hidden_size").asInt(), heads,
                n.path("num_key_value_heads").asInt(heads), n.path("intermediate_size").asInt(),
                n.path("vocab_size").asInt(), maxPositions(n),
                n.path("rms_norm_eps").asDouble(1e-6), theta,
                n.path("tie_word_embeddings").asBoolean(false),
                tokenId(n, "bos_token_id"), tokenId(n, "eos_token_id"),
                RopeScaling.parse(v5 ? ropeParameters : n.get("rope_scaling")), moreTokenIds(n, "eos_token_id"));
    }

    /**
     * Refuses, by name, a config asking for math the stages do not compute, rather than running it as the plain
     * architecture: a GELU other than the tanh form GPT-2 uses, an MLP activation other than SiLU, or a head width
     * set apart from {@code hidden_size / num_attention_heads} (e.g. Mistral NeMo's 128 with 5120 / 32 = 160).
     */
    private static void requireComputable(JsonNode n, Architecture arch) {
        if (arch == Architecture.GPT2) {
            String act = text(n, "activation_function", "gelu_new");
            if (!act.equals("gelu_new") && !act.equals("gelu_pytorch_tanh") && !act.equals("gelu_fast")) { // all tanh GELU
                throw new IllegalArgumentException("activation_function '" + act
                        + "' is not supported: GPT-2 stages compute gelu_new (the tanh approximation)");
            }
            if (n.path("scale_attn_by_inverse_layer_idx").asBoolean(false) || !n.path("scale_attn_weights").asBoolean(true)) {
                throw new IllegalArgumentException("scale_attn_by_inverse_layer_idx / scale_attn_weights=false are not"
                        + " supported: attention scores are scaled by 1/sqrt(head dim)");
            }
            return;
        }
        String act = text(n, "hidden_act", "silu");
        if (!act.equals("silu") && !act.equals("swish")) { // transformers' two names for x * sigmoid(x)
            throw new IllegalArgumentException("hidden_act '" + act + "' is not supported: Llama-family stages compute SiLU");
        }
        JsonNode headDim = n.get("head_dim");
        int hidden = n.path("hidden_size").asInt();
        int heads = n.path("num_attention_heads").asInt();
        if (headDim != null && !headDim.isNull() && heads > 0 && headDim.asInt() != hidden / heads) {
            throw new IllegalArgumentException("head_dim " + headDim.asInt() + " is not supported: it must be hidden_size / "
                    + "num_attention_heads = " + hidden / heads);
        }
    }

    /**
     * Positions a Llama-family config can serve exactly. With a sliding window (Mistral), attention over at most
     * the window is the same as full attention, so the window caps the positions instead of being emulated.
     */
    private static int maxPositions(JsonNode n) {
        int positions = n.path("max_position_embeddings").asInt(2048);
        JsonNode window = n.get("sliding_window");
        boolean windowed = window != null && window.isIntegralNumber() && window.asInt() > 0
                && n.path("use_sliding_window").asBoolean(true);
        return windowed ? Math.min(positions, window.asInt()) : positions;
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
            m.put("architectures", List.of("LlamaForCausalLM"));
            m.put("model_type", "llama");
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
        perLayer = 2 * h + h * h + 2 * h * kvDim() + h * h + 3 * h * (long) intermediateSize;
        return embed + numLayers * perLayer + h + head;
    }

    private static String text(JsonNode n, String field, String fallback) {
        JsonNode v = n.get(field);
        return v == null || v.isNull() ? fallback : v.asString();
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
            v.forEach(id -> ids.add(id.asInt()));
        } else if (v != null && !v.isNull()) {
            ids.add(v.asInt());
        }
        return ids;
    }
}
