package io.butterfly.common.gguf;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How llama.cpp lays out a Llama-family model (Llama 2/3, Mistral, Qwen2) in GGUF, against Hugging Face's layout:
 * metadata keys to {@code config.json} fields, tensor names to transformers' names, and the row order of the query and
 * key projections.
 *
 * <p>llama.cpp's converter ({@code convert_hf_to_gguf.py}, {@code LlamaModel.permute}) reorders the rows of
 * {@code q_proj} and {@code k_proj} (weights and biases) of the {@code llama} architecture for its own rotary layout
 * (pairs of adjacent values rotate together, where transformers rotates the two halves of each head): within each
 * head of {@code d} rows, file row {@code 2i + j} is transformers' row {@code j * d/2 + i}. {@link #sourceRow} undoes
 * that, so the math equals the original model's. Qwen2's converter does not permute.
 */
public final class GgufLlama {

    /** The architectures read, as {@code general.architecture} names them. */
    public static final List<String> ARCHITECTURES = List.of("llama", "qwen2", "mistral");

    private static final Pattern BLOCK = Pattern.compile("blk\\.(\\d+)\\.(.+)");
    private static final Pattern LAYER = Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");
    private static final Map<String, String> GLOBAL = Map.of(
            "token_embd.weight", "model.embed_tokens.weight",
            "output_norm.weight", "model.norm.weight",
            "output.weight", "lm_head.weight");
    private static final Map<String, String> PER_LAYER = Map.ofEntries(
            Map.entry("attn_norm.weight", "input_layernorm.weight"),
            Map.entry("attn_q.weight", "self_attn.q_proj.weight"),
            Map.entry("attn_k.weight", "self_attn.k_proj.weight"),
            Map.entry("attn_v.weight", "self_attn.v_proj.weight"),
            Map.entry("attn_q.bias", "self_attn.q_proj.bias"),
            Map.entry("attn_k.bias", "self_attn.k_proj.bias"),
            Map.entry("attn_v.bias", "self_attn.v_proj.bias"),
            Map.entry("attn_output.weight", "self_attn.o_proj.weight"),
            Map.entry("ffn_norm.weight", "post_attention_layernorm.weight"),
            Map.entry("ffn_gate.weight", "mlp.gate_proj.weight"),
            Map.entry("ffn_up.weight", "mlp.up_proj.weight"),
            Map.entry("ffn_down.weight", "mlp.down_proj.weight"));

    private GgufLlama() {
    }

    /** transformers' name of a GGUF tensor, if it is one of a Llama-family model's. */
    public static Optional<String> hfName(String ggufName) {
        String global = GLOBAL.get(ggufName);
        if (global != null) {
            return Optional.of(global);
        }
        Matcher m = BLOCK.matcher(ggufName);
        if (m.matches() && PER_LAYER.containsKey(m.group(2))) {
            return Optional.of("model.layers." + m.group(1) + "." + PER_LAYER.get(m.group(2)));
        }
        return Optional.empty();
    }

    /** The GGUF name of a transformers tensor, if it is one of a Llama-family model's. */
    public static Optional<String> ggufName(String hfName) {
        for (Map.Entry<String, String> e : GLOBAL.entrySet()) {
            if (e.getValue().equals(hfName)) {
                return Optional.of(e.getKey());
            }
        }
        Matcher m = LAYER.matcher(hfName);
        if (m.matches()) {
            for (Map.Entry<String, String> e : PER_LAYER.entrySet()) {
                if (e.getValue().equals(m.group(2))) {
                    return Optional.of("blk." + m.group(1) + "." + e.getKey());
                }
            }
        }
        return Optional.empty();
    }

    /** Whether this architecture's converter permuted the query and key rows (see the class comment). */
    public static boolean permutesQueryKey(String architecture) {
        return architecture.equals("llama") || architecture.equals("mistral");
    }

    /**
     * The number of heads a tensor's rows are permuted in, if it is a query or key projection (weight or bias) of a
     * permuting architecture; 0 otherwise.
     */
    public static int permutedHeads(String architecture, String hfName, ModelConfig config) {
        if (!permutesQueryKey(architecture)) {
            return 0;
        }
        if (hfName.endsWith("self_attn.q_proj.weight") || hfName.endsWith("self_attn.q_proj.bias")) {
            return config.numHeads();
        }
        if (hfName.endsWith("self_attn.k_proj.weight") || hfName.endsWith("self_attn.k_proj.bias")) {
            return config.numKvHeads();
        }
        return 0;
    }

    /**
     * The file row holding transformers' row {@code row} of a projection permuted in {@code heads} heads of
     * {@code rows / heads} rows each.
     */
    public static long sourceRow(long row, long rows, int heads) {
        long d = rows / heads;
        long head = row / d;
        long within = row % d;
        long half = d / 2;
        long j = within / half;
        long i = within % half;
        return head * d + 2 * i + j;
    }

    /** The inverse of {@link #sourceRow}: transformers' row that llama.cpp's converter writes as file row {@code fileRow}. */
    public static long permutedRow(long fileRow, long rows, int heads) {
        long d = rows / heads;
        long head = fileRow / d;
        long within = fileRow % d;
        return head * d + (within % 2) * (d / 2) + within / 2;
    }

    /** The model's hyper-parameters from the file's metadata, as transformers' {@code config.json} would give them. */
    public static ModelConfig config(GgufFile f) {
        String arch = f.string("general.architecture")
                .orElseThrow(() -> new InvalidGgufException(f.path() + " names no general.architecture"));
        if (!ARCHITECTURES.contains(arch)) {
            throw new InvalidGgufException(f.path() + " holds a '" + arch + "' model; the Llama-family architectures "
                    + ARCHITECTURES + " are served");
        }
        int layers = intKey(f, arch + ".block_count");
        int hidden = intKey(f, arch + ".embedding_length");
        int heads = intKey(f, arch + ".attention.head_count");
        int kvHeads = f.integer(arch + ".attention.head_count_kv").map(Long::intValue).orElse(heads);
        int inter = intKey(f, arch + ".feed_forward_length");
        int context = intKey(f, arch + ".context_length");
        double eps = f.number(arch + ".attention.layer_norm_rms_epsilon")
                .orElseThrow(() -> new InvalidGgufException(f.path() + " has no " + arch + ".attention.layer_norm_rms_epsilon"));
        double theta = f.number(arch + ".rope.freq_base").orElse(10000.0);
        int vocab = f.array("tokenizer.ggml.tokens").map(List::size)
                .or(() -> f.integer(arch + ".vocab_size").map(Long::intValue))
                .orElseThrow(() -> new InvalidGgufException(f.path() + " has no vocabulary (tokenizer.ggml.tokens)"));
        f.integer(arch + ".rope.dimension_count").ifPresent(dims -> {
            if (heads > 0 && dims != hidden / heads) {
                throw new InvalidGgufException(f.path() + ": rotary embeddings over " + dims + " of each head's "
                        + hidden / heads + " dimensions are not supported");
            }
        });
        RopeScaling scaling = null;
        Optional<GgufTensor> freqs = f.tensor(GgufRopeFreqs.TENSOR);
        if (freqs.isPresent() && heads > 0) {
            try {
                scaling = GgufRopeFreqs.scaling(GgufRopeFreqs.read(f, freqs.get()), hidden / heads, theta);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (InvalidGgufException e) {
                throw new InvalidGgufException(f.path() + ": " + e.getMessage());
            }
        }
        Optional<String> scalingType = f.string(arch + ".rope.scaling.type");
        if (scalingType.isPresent() && !scalingType.get().equals("none")) {
            if (freqs.isPresent()) {
                throw new InvalidGgufException(f.path() + " scales its rotary frequencies twice: by "
                        + GgufRopeFreqs.TENSOR + " and by rope scaling '" + scalingType.get() + "'");
            }
            if (!scalingType.get().equals("linear")) {
                throw new InvalidGgufException(f.path() + ": rope scaling '" + scalingType.get() + "' is not supported"
                        + " (linear is)");
            }
            scaling = RopeScaling.linear(f.number(arch + ".rope.scaling.factor").orElse(1.0));
        }
        boolean tied = f.tensor("output.weight").isEmpty();
        int bos = f.integer("tokenizer.ggml.bos_token_id").map(Long::intValue).orElse(-1);
        int eos = f.integer("tokenizer.ggml.eos_token_id").map(Long::intValue).orElse(-1);
        try {
            return new ModelConfig(Architecture.LLAMA, layers, hidden, heads, kvHeads, inter, vocab, context, eps, theta,
                    tied, bos, eos, scaling);
        } catch (IllegalArgumentException e) {
            throw new InvalidGgufException(f.path() + ": " + e.getMessage());
        }
    }

    /** The transformers {@code model_type} of a GGUF architecture. */
    public static String modelType(String architecture) {
        return architecture.toLowerCase(Locale.ROOT);
    }

    private static int intKey(GgufFile f, String key) {
        long v = f.integer(key).orElseThrow(() -> new InvalidGgufException(f.path() + " has no integer " + key));
        if (v <= 0 || v > Integer.MAX_VALUE) {
            throw new InvalidGgufException(f.path() + ": " + key + " is " + v);
        }
        return (int) v;
    }
}
