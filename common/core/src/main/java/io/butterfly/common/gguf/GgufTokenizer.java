package io.butterfly.common.gguf;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * A GGUF file's vocabulary as a Hugging Face {@code tokenizer.json} (which the coordinator tokenizes with), and a
 * {@code tokenizer.json}'s byte-level BPE as GGUF metadata (for the GGUF files the tools write), as transformers'
 * GGUF integration and llama.cpp's converter map them.
 *
 * <p>Two GGUF vocabularies are read: {@code gpt2} (byte-level BPE: Llama 3, Qwen2, GPT-2; the pre-tokenizer's
 * splitting regex by {@code tokenizer.ggml.pre}) and {@code llama} (SentencePiece BPE: Llama 2, Mistral; merges built
 * from the scores as transformers' {@code GGUFTokenizerSkeleton} does when the file has none, byte fallback through
 * the {@code <0xNN>} tokens). Tokens of type 3 (control) are special added tokens, type 4 (user-defined) added ones.
 */
public final class GgufTokenizer {

    private static final String SPACE = "\u2581";
    /** llama.cpp's token types. */
    private static final int NORMAL = 1;
    private static final int CONTROL = 3;
    private static final int USER_DEFINED = 4;

    /** The pre-tokenizer splitting regex of a {@code tokenizer.ggml.pre}, as the model's own tokenizer.json has it. */
    private static final Map<String, String> SPLIT_REGEX = Map.of(
            "llama-bpe", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                    + "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
            "qwen2", "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*"
                    + "|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+");

    private GgufTokenizer() {
    }

    /** The {@code tokenizer.json} document (nested maps and lists) of a GGUF file's vocabulary. */
    public static Map<String, Object> toTokenizerJson(GgufFile f) {
        String model = f.string("tokenizer.ggml.model")
                .orElseThrow(() -> new InvalidGgufException(f.path() + " has no tokenizer.ggml.model"));
        List<String> tokens = strings(f, "tokenizer.ggml.tokens");
        List<Long> types = f.array("tokenizer.ggml.token_type").map(GgufTokenizer::longs).orElse(List.of());
        if (!types.isEmpty() && types.size() != tokens.size()) {
            throw new InvalidGgufException(f.path() + ": " + types.size() + " token types for " + tokens.size() + " tokens");
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("version", "1.0");
        doc.put("truncation", null);
        doc.put("padding", null);
        doc.put("added_tokens", addedTokens(tokens, types));
        switch (model) {
            case "gpt2" -> {
                String pre = f.string("tokenizer.ggml.pre").orElse("gpt-2");
                doc.put("normalizer", null);
                doc.put("pre_tokenizer", byteLevelPreTokenizer(pre));
                doc.put("post_processor", bosProcessor(f, tokens, false));
                doc.put("decoder", map("type", "ByteLevel", "add_prefix_space", true, "trim_offsets", true, "use_regex", true));
                doc.put("model", bpe(tokens, merges(f), null, false));
            }
            case "llama" -> {
                doc.put("normalizer", map("type", "Sequence", "normalizers", List.of(
                        map("type", "Prepend", "prepend", SPACE),
                        map("type", "Replace", "pattern", map("String", " "), "content", SPACE))));
                doc.put("pre_tokenizer", null);
                doc.put("post_processor", bosProcessor(f, tokens, true));
                doc.put("decoder", map("type", "Sequence", "decoders", List.of(
                        map("type", "Replace", "pattern", map("String", SPACE), "content", " "),
                        map("type", "ByteFallback"),
                        map("type", "Fuse"),
                        map("type", "Strip", "content", " ", "start", 1, "stop", 0))));
                List<String> merges = f.array("tokenizer.ggml.merges").isPresent() ? merges(f)
                        : mergesFromScores(tokens, scores(f, tokens.size()));
                String unk = f.integer("tokenizer.ggml.unknown_token_id").map(id -> tokens.get(id.intValue())).orElse(null);
                doc.put("model", bpe(tokens, merges, unk, true));
            }
            default -> throw new InvalidGgufException(f.path() + ": vocabulary '" + model + "' is not supported (gpt2, llama)");
        }
        return doc;
    }

    /** A byte-level BPE {@code tokenizer.json} as GGUF metadata ({@code tokenizer.ggml.*}, model gpt2). */
    public static Map<String, GgufValue> toGguf(JsonNode tokenizerJson, int bos, int eos) {
        JsonNode model = tokenizerJson.get("model");
        if (model == null || !"BPE".equals(model.path("type").asString(""))) {
            throw new IllegalArgumentException("only byte-level BPE tokenizers are written to GGUF");
        }
        Map<Integer, String> byId = new HashMap<>();
        model.get("vocab").properties().forEach(e -> byId.put(e.getValue().asInt(), e.getKey()));
        Map<Integer, Integer> type = new HashMap<>();
        for (JsonNode added : tokenizerJson.path("added_tokens")) {
            int id = added.get("id").asInt();
            byId.put(id, added.get("content").asString());
            type.put(id, added.path("special").asBoolean(false) ? CONTROL : USER_DEFINED);
        }
        int size = byId.keySet().stream().mapToInt(Integer::intValue).max().orElse(-1) + 1;
        List<String> tokens = new ArrayList<>(size);
        List<Long> types = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            String t = byId.get(i);
            if (t == null) {
                throw new IllegalArgumentException("the vocabulary has no token " + i);
            }
            tokens.add(t);
            types.add((long) type.getOrDefault(i, NORMAL));
        }
        List<String> merges = new ArrayList<>();
        for (JsonNode m : model.path("merges")) {
            merges.add(m.isArray() ? m.get(0).asString() + " " + m.get(1).asString() : m.asString());
        }
        Map<String, GgufValue> meta = new LinkedHashMap<>();
        meta.put("tokenizer.ggml.model", GgufValue.string("gpt2"));
        meta.put("tokenizer.ggml.pre", GgufValue.string("gpt-2"));
        meta.put("tokenizer.ggml.tokens", GgufValue.array(GgufValueType.STRING, tokens));
        meta.put("tokenizer.ggml.token_type", GgufValue.array(GgufValueType.INT32, types));
        meta.put("tokenizer.ggml.merges", GgufValue.array(GgufValueType.STRING, merges));
        if (bos >= 0) {
            meta.put("tokenizer.ggml.bos_token_id", GgufValue.uint32(bos));
        }
        if (eos >= 0) {
            meta.put("tokenizer.ggml.eos_token_id", GgufValue.uint32(eos));
        }
        boolean addsBos = "TemplateProcessing".equals(tokenizerJson.path("post_processor").path("type").asString(""));
        meta.put("tokenizer.ggml.add_bos_token", GgufValue.bool(addsBos));
        return meta;
    }

    private static List<Map<String, Object>> addedTokens(List<String> tokens, List<Long> types) {
        List<Map<String, Object>> added = new ArrayList<>();
        for (int i = 0; i < types.size(); i++) {
            int t = types.get(i).intValue();
            if (t == CONTROL || t == USER_DEFINED) {
                Map<String, Object> a = new LinkedHashMap<>();
                a.put("id", i);
                a.put("content", tokens.get(i));
                a.put("single_word", false);
                a.put("lstrip", false);
                a.put("rstrip", false);
                a.put("normalized", t != CONTROL);
                a.put("special", t == CONTROL);
                added.add(a);
            }
        }
        return added;
    }

    private static Object byteLevelPreTokenizer(String pre) {
        String regex = SPLIT_REGEX.get(pre);
        if (regex == null) {
            return map("type", "ByteLevel", "add_prefix_space", false, "trim_offsets", true, "use_regex", true);
        }
        return map("type", "Sequence", "pretokenizers", List.of(
                map("type", "Split", "pattern", map("Regex", regex), "behavior", "Isolated", "invert", false),
                map("type", "ByteLevel", "add_prefix_space", false, "trim_offsets", true, "use_regex", false)));
    }

    /** A template adding the BOS token in front when the file says so (SentencePiece vocabularies do by default). */
    private static Object bosProcessor(GgufFile f, List<String> tokens, boolean byDefault) {
        boolean adds = f.bool("tokenizer.ggml.add_bos_token").orElse(byDefault);
        Long bos = f.integer("tokenizer.ggml.bos_token_id").orElse(null);
        if (!adds || bos == null || bos < 0 || bos >= tokens.size()) {
            return null;
        }
        String token = tokens.get(bos.intValue());
        Map<String, Object> bosPiece = map("SpecialToken", map("id", token, "type_id", 0));
        return map("type", "TemplateProcessing",
                "single", List.of(bosPiece, map("Sequence", map("id", "A", "type_id", 0))),
                "pair", List.of(bosPiece, map("Sequence", map("id", "A", "type_id", 0)),
                        map("SpecialToken", map("id", token, "type_id", 1)), map("Sequence", map("id", "B", "type_id", 1))),
                "special_tokens", map(token, map("id", token, "ids", List.of(bos.intValue()), "tokens", List.of(token))));
    }

    private static Map<String, Object> bpe(List<String> tokens, List<String> merges, String unk, boolean sentencePiece) {
        Map<String, Object> vocab = new LinkedHashMap<>();
        for (int i = 0; i < tokens.size(); i++) {
            vocab.putIfAbsent(tokens.get(i), i);
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", "BPE");
        m.put("dropout", null);
        m.put("unk_token", unk);
        m.put("continuing_subword_prefix", null);
        m.put("end_of_word_suffix", null);
        m.put("fuse_unk", sentencePiece);
        m.put("byte_fallback", sentencePiece);
        m.put("ignore_merges", false);
        m.put("vocab", vocab);
        m.put("merges", merges);
        return m;
    }

    /**
     * SentencePiece merges from the vocabulary's scores, as transformers does for a GGUF file without merges: every
     * split of a token into two tokens of the vocabulary is a merge, ranked by the merged token's score (highest
     * first), ties by the parts' scores.
     */
    static List<String> mergesFromScores(List<String> tokens, float[] scores) {
        Map<String, Integer> ids = new HashMap<>();
        for (int i = 0; i < tokens.size(); i++) {
            ids.putIfAbsent(tokens.get(i), i);
        }
        record Merge(String left, String right, float score, int token, float leftScore, float rightScore) {
        }
        List<Merge> merges = new ArrayList<>();
        for (int i = 0; i < tokens.size(); i++) {
            String t = tokens.get(i);
            for (int cut = 1; cut < t.length(); cut++) {
                if (Character.isLowSurrogate(t.charAt(cut))) {
                    continue;
                }
                Integer l = ids.get(t.substring(0, cut));
                Integer r = ids.get(t.substring(cut));
                if (l != null && r != null) {
                    merges.add(new Merge(t.substring(0, cut), t.substring(cut), scores[i], i, scores[l], scores[r]));
                }
            }
        }
        // transformers: each token's splits by their parts' scores, then all merges by the token's score, stably
        merges.sort(Comparator.comparing(Merge::score, Comparator.reverseOrder())
                .thenComparing(Merge::token)
                .thenComparing(Merge::leftScore, Comparator.reverseOrder())
                .thenComparing(Merge::rightScore, Comparator.reverseOrder()));
        return merges.stream().map(m -> m.left() + " " + m.right()).toList();
    }

    private static List<String> merges(GgufFile f) {
        return strings(f, "tokenizer.ggml.merges");
    }

    private static List<String> strings(GgufFile f, String key) {
        List<?> values = f.array(key).orElseThrow(() -> new InvalidGgufException(f.path() + " has no " + key));
        List<String> out = new ArrayList<>(values.size());
        for (Object v : values) {
            if (!(v instanceof String s)) {
                throw new InvalidGgufException(f.path() + ": " + key + " holds a non-string");
            }
            out.add(s);
        }
        return out;
    }

    private static float[] scores(GgufFile f, int n) {
        List<?> values = f.array("tokenizer.ggml.scores")
                .orElseThrow(() -> new InvalidGgufException(f.path() + " has a SentencePiece vocabulary without scores"));
        if (values.size() != n) {
            throw new InvalidGgufException(f.path() + ": " + values.size() + " scores for " + n + " tokens");
        }
        float[] s = new float[n];
        for (int i = 0; i < n; i++) {
            s[i] = ((Number) values.get(i)).floatValue();
        }
        return s;
    }

    private static List<Long> longs(List<?> values) {
        return values.stream().map(v -> ((Number) v).longValue()).toList();
    }

    private static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }
}
