package io.butterfly.common.model.generate;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ByteLevelAlphabet;
import io.butterfly.common.model.ModelConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.SerializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * Builds a Hugging Face {@code tokenizer.json} for a generated model: a GPT-2 style byte-level BPE whose vocabulary
 * covers exactly {@code config.vocabSize()} ids.
 *
 * <p>Layout: the special tokens sit at their configured ids ({@code <s>}/{@code </s>} for Llama,
 * {@code <|endoftext|>} for GPT-2), ChatML's {@code <|im_start|>} and {@code <|im_end|>} at the highest free ids (the
 * model's {@link #CHAT_TEMPLATE} writes them); the remaining ids are filled in order with the 256 byte symbols, then with BPE
 * merges learned deterministically from a small built-in English corpus, then (when the corpus runs out of
 * repeated pairs) with deterministic synthetic merges of already known tokens. Every token is a byte-level string,
 * so any id sequence decodes. For Llama a {@code TemplateProcessing} post-processor prepends {@code <s>}.
 */
public final class TokenizerGenerator {

    public static final String BOS_LLAMA = "<s>";
    public static final String EOS_LLAMA = "</s>";
    public static final String ENDOFTEXT = "<|endoftext|>";
    public static final String STARTOFTEXT = "<|startoftext|>";
    /** ChatML's turn delimiters, special tokens of every generated tokenizer. */
    public static final String IM_START = "<|im_start|>";
    public static final String IM_END = "<|im_end|>";

    /**
     * The chat template a generated model ships in {@code tokenizer_config.json}: ChatML (Qwen's and many others'
     * format, without a default system message), each turn {@code <|im_start|>role\ncontent<|im_end|>\n}, then
     * {@code <|im_start|>assistant\n} when a reply is wanted. With tools it is Qwen2.5's (Hermes) tool format: the
     * tools listed in the system turn, an assistant's calls as {@code <tool_call>} blocks (its content may be null),
     * the tools' answers as {@code <tool_response>} blocks in a user turn; a conversation without tools renders as
     * plain ChatML.
     */
    public static final String CHAT_TEMPLATE = """
            {%- if tools %}
                {{- '<|im_start|>system\n' }}
                {%- if messages[0]['role'] == 'system' %}
                    {{- messages[0]['content'] + '\n\n' }}
                {%- endif %}
                {{- '# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided \
            with function signatures within <tools></tools> XML tags:\n<tools>' }}
                {%- for tool in tools %}
                    {{- '\n' }}
                    {{- tool | tojson }}
                {%- endfor %}
                {{- '\n</tools>\n\nFor each function call, return a json object with function name and arguments \
            within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": \
            <args-json-object>}\n</tool_call><|im_end|>\n' }}
            {%- endif %}
            {%- for message in messages %}
                {%- if message.role == 'system' and loop.first and tools %}
                {%- elif message.role == 'assistant' and message.tool_calls %}
                    {{- '<|im_start|>assistant' }}
                    {%- if message.content %}
                        {{- '\n' + message.content }}
                    {%- endif %}
                    {%- for tool_call in message.tool_calls %}
                        {{- '\n<tool_call>\n{"name": "' + tool_call.function.name + '", "arguments": ' }}
                        {{- tool_call.function.arguments | tojson }}
                        {{- '}\n</tool_call>' }}
                    {%- endfor %}
                    {{- '<|im_end|>\n' }}
                {%- elif message.role == 'tool' %}
                    {%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}
                        {{- '<|im_start|>user' }}
                    {%- endif %}
                    {{- '\n<tool_response>\n' + message.content + '\n</tool_response>' }}
                    {%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}
                        {{- '<|im_end|>\n' }}
                    {%- endif %}
                {%- else %}
                    {{- '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}
                {%- endif %}
            {%- endfor %}
            {%- if add_generation_prompt %}
                {{- '<|im_start|>assistant\n' }}
            {%- endif %}
            """;

    private static final ObjectMapper JSON = JsonMapper.builder().enable(SerializationFeature.INDENT_OUTPUT).build();

    /** The GPT-2 pre-tokenization regex (what the ByteLevel pre-tokenizer uses with use_regex=true). */
    private static final Pattern GPT2_SPLIT = Pattern.compile(
            "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+");

    /** Each byte's symbol in GPT-2's byte-level alphabet, as a one-character string. */
    private static final String[] BYTE_TO_CHAR = new String[256];

    static {
        for (int b = 0; b < 256; b++) {
            BYTE_TO_CHAR[b] = String.valueOf(ByteLevelAlphabet.charOf(b));
        }
    }

    private TokenizerGenerator() {
    }

    /** Writes {@code tokenizer.json} for {@code config} to {@code file}. */
    public static void write(ModelConfig config, Path file) throws IOException {
        Files.write(file, JSON.writeValueAsBytes(build(config)));
    }

    /** The special tokens for {@code config}: id to content, sorted by id. */
    public static TreeMap<Integer, String> specialTokens(ModelConfig config) {
        int v = config.vocabSize();
        int bos = config.bosTokenId();
        int eos = config.eosTokenId();
        TreeMap<Integer, String> specials = new TreeMap<>();
        if (config.architecture() == Architecture.GPT2) {
            if (bos >= 0 && eos >= 0 && bos != eos) {
                specials.put(bos, STARTOFTEXT);
                specials.put(eos, ENDOFTEXT);
            } else {
                specials.put(eos >= 0 ? eos : bos >= 0 ? bos : v - 1, ENDOFTEXT);
            }
        } else if (bos >= 0 && bos == eos) {
            specials.put(bos, ENDOFTEXT);
        } else {
            if (bos >= 0) {
                specials.put(bos, BOS_LLAMA);
            }
            if (eos >= 0) {
                specials.put(eos, EOS_LLAMA);
            }
        }
        for (int id : specials.keySet()) {
            if (id >= v) {
                throw new IllegalArgumentException("special token id " + id + " is outside the vocabulary of " + v);
            }
        }
        int minimum = 256 + specials.size() + 2;
        if (v < minimum) {
            throw new IllegalArgumentException("vocab size " + v + " is too small for a byte-level tokenizer: need at least "
                    + minimum + " (256 byte symbols + " + (specials.size() + 2) + " special tokens)");
        }
        int top = v - 1;
        for (String chat : new String[]{IM_END, IM_START}) {
            while (specials.containsKey(top)) {
                top--;
            }
            specials.put(top, chat);
        }
        return specials;
    }

    /** The id of special token {@code content} in {@code config}'s tokenizer. */
    public static int idOf(ModelConfig config, String content) {
        return specialTokens(config).entrySet().stream().filter(e -> e.getValue().equals(content))
                .mapToInt(java.util.Map.Entry::getKey).findFirst()
                .orElseThrow(() -> new IllegalArgumentException(content + " is not a special token of this tokenizer"));
    }

    /**
     * Writes {@code tokenizer_config.json} as transformers saves it: the chat template and the special tokens it may
     * write ({@code bos_token}, {@code eos_token}: the configured ones, none for an id the config leaves unset).
     */
    public static void writeConfig(ModelConfig config, Path file) throws IOException {
        TreeMap<Integer, String> specials = specialTokens(config);
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("bos_token", config.bosTokenId() >= 0 ? specials.get(config.bosTokenId()) : null);
        doc.put("eos_token", config.eosTokenId() >= 0 ? specials.get(config.eosTokenId()) : null);
        doc.put("chat_template", CHAT_TEMPLATE);
        doc.put("clean_up_tokenization_spaces", false);
        doc.put("model_max_length", config.maxPositions());
        doc.put("tokenizer_class", "PreTrainedTokenizerFast");
        Files.write(file, JSON.writeValueAsBytes(doc));
    }

    /** The {@code tokenizer.json} document as nested maps/lists (serialised with Jackson). */
    public static Map<String, Object> build(ModelConfig config) {
        int v = config.vocabSize();
        TreeMap<Integer, String> specials = specialTokens(config);

        String[] byId = new String[v];
        Map<String, Integer> vocab = new HashMap<>();
        specials.forEach((id, content) -> {
            byId[id] = content;
            vocab.put(content, id);
        });
        int[] next = {0};
        java.util.function.Consumer<String> add = token -> {
            while (byId[next[0]] != null) {
                next[0]++;
            }
            byId[next[0]] = token;
            vocab.put(token, next[0]);
        };
        for (int b = 0; b < 256; b++) {
            add.accept(BYTE_TO_CHAR[b]);
        }
        int mergesWanted = v - 256 - specials.size();
        List<String[]> merges = learnMerges(Corpus.TEXT, mergesWanted, vocab);
        for (String[] m : merges) {
            add.accept(m[0] + m[1]);
        }
        if (merges.size() < mergesWanted) {
            List<String[]> filler = syntheticMerges(merges, mergesWanted - merges.size(), vocab);
            for (String[] m : filler) {
                add.accept(m[0] + m[1]);
            }
            merges.addAll(filler);
        }
        for (int i = 0; i < v; i++) {
            if (byId[i] == null) {
                throw new IllegalStateException("tokenizer id " + i + " left unassigned");
            }
        }

        Map<String, Object> vocabJson = new LinkedHashMap<>();
        for (int i = 0; i < v; i++) {
            vocabJson.put(byId[i], i);
        }
        List<String> mergesJson = new ArrayList<>(merges.size());
        for (String[] m : merges) {
            mergesJson.add(m[0] + " " + m[1]);
        }

        List<Map<String, Object>> added = new ArrayList<>();
        specials.forEach((id, content) -> {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("id", id);
            t.put("content", content);
            t.put("single_word", false);
            t.put("lstrip", false);
            t.put("rstrip", false);
            t.put("normalized", false);
            t.put("special", true);
            added.add(t);
        });

        Map<String, Object> model = new LinkedHashMap<>();
        model.put("type", "BPE");
        model.put("dropout", null);
        model.put("unk_token", null);
        model.put("continuing_subword_prefix", null);
        model.put("end_of_word_suffix", null);
        model.put("fuse_unk", false);
        model.put("byte_fallback", false);
        model.put("ignore_merges", false);
        model.put("vocab", vocabJson);
        model.put("merges", mergesJson);

        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("version", "1.0");
        doc.put("truncation", null);
        doc.put("padding", null);
        doc.put("added_tokens", added);
        doc.put("normalizer", null);
        doc.put("pre_tokenizer", byteLevel(false, true));
        doc.put("post_processor", postProcessor(config, specials));
        doc.put("decoder", byteLevel(true, true));
        doc.put("model", model);
        return doc;
    }

    private static Map<String, Object> byteLevel(boolean addPrefixSpace, boolean trimOffsets) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", "ByteLevel");
        m.put("add_prefix_space", addPrefixSpace);
        m.put("trim_offsets", trimOffsets);
        m.put("use_regex", true);
        return m;
    }

    private static Map<String, Object> postProcessor(ModelConfig config, TreeMap<Integer, String> specials) {
        int bos = config.bosTokenId();
        if (config.architecture() != Architecture.LLAMA || bos < 0) {
            Map<String, Object> m = byteLevel(true, false);
            return m;
        }
        String bosToken = specials.get(bos);
        Map<String, Object> bosPiece = Map.of("SpecialToken", orderedMap("id", bosToken, "type_id", 0));
        Map<String, Object> single = new LinkedHashMap<>();
        single.put("type", "TemplateProcessing");
        single.put("single", List.of(bosPiece, Map.of("Sequence", orderedMap("id", "A", "type_id", 0))));
        single.put("pair", List.of(bosPiece, Map.of("Sequence", orderedMap("id", "A", "type_id", 0)),
                Map.of("SpecialToken", orderedMap("id", bosToken, "type_id", 1)),
                Map.of("Sequence", orderedMap("id", "B", "type_id", 1))));
        Map<String, Object> st = new LinkedHashMap<>();
        st.put("id", bosToken);
        st.put("ids", List.of(bos));
        st.put("tokens", List.of(bosToken));
        single.put("special_tokens", Map.of(bosToken, st));
        return single;
    }

    private static Map<String, Object> orderedMap(String k1, Object v1, String k2, Object v2) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(k1, v1);
        m.put(k2, v2);
        return m;
    }

    /** Byte-level form of a piece of text (each UTF-8 byte mapped to its printable GPT-2 symbol). */
    static String toByteLevel(String text) {
        StringBuilder sb = new StringBuilder();
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            sb.append(BYTE_TO_CHAR[b & 0xFF]);
        }
        return sb.toString();
    }

    /** Classic BPE training on the corpus' pre-tokenized words; stops at {@code max} merges or when no pair repeats. */
    static List<String[]> learnMerges(String corpus, int max, Map<String, Integer> vocab) {
        Map<String, Integer> counts = new LinkedHashMap<>();
        Matcher m = GPT2_SPLIT.matcher(corpus);
        while (m.find()) {
            counts.merge(toByteLevel(m.group()), 1, Integer::sum);
        }
        List<List<String>> words = new ArrayList<>();
        List<Integer> freq = new ArrayList<>();
        counts.forEach((w, c) -> {
            List<String> symbols = new ArrayList<>();
            w.codePoints().forEach(cp -> symbols.add(new String(Character.toChars(cp))));
            words.add(symbols);
            freq.add(c);
        });
        List<String[]> merges = new ArrayList<>();
        while (merges.size() < max) {
            Map<String, Integer> pairs = new HashMap<>();
            for (int w = 0; w < words.size(); w++) {
                List<String> s = words.get(w);
                for (int i = 0; i + 1 < s.size(); i++) {
                    pairs.merge(s.get(i) + ' ' + s.get(i + 1), freq.get(w), Integer::sum);
                }
            }
            String best = null;
            int bestCount = 1;
            for (Map.Entry<String, Integer> e : pairs.entrySet()) {
                int c = e.getValue();
                if (c < 2) {
                    continue;
                }
                String[] ab = e.getKey().split(" ", 2);
                if (vocab.containsKey(ab[0] + ab[1])) {
                    continue;
                }
                if (c > bestCount || (c == bestCount && best != null && e.getKey().compareTo(best) < 0)) {
                    best = e.getKey();
                    bestCount = c;
                }
            }
            if (best == null) {
                break;
            }
            String[] ab = best.split(" ", 2);
            String joined = ab[0] + ab[1];
            merges.add(ab);
            vocab.put(joined, -1); // placeholder so the caller's id assignment sees it as taken; reassigned below
            for (List<String> s : words) {
                for (int i = 0; i + 1 < s.size(); i++) {
                    if (s.get(i).equals(ab[0]) && s.get(i + 1).equals(ab[1])) {
                        s.set(i, joined);
                        s.remove(i + 1);
                    }
                }
            }
        }
        for (String[] ab : merges) {
            vocab.remove(ab[0] + ab[1]);
        }
        return merges;
    }

    /**
     * Deterministic filler merges once the corpus is exhausted: pairs of known tokens (learned tokens first, then
     * letters, digits, punctuation and the space symbol, then the other bytes), walked diagonally so the filler mixes
     * many different prefixes; a pair is skipped when its concatenation already exists.
     */
    static List<String[]> syntheticMerges(List<String[]> learned, int count, Map<String, Integer> vocab) {
        List<String> base = new ArrayList<>();
        java.util.Set<String> seen = new java.util.HashSet<>();
        for (String[] ab : learned) {
            if (seen.add(ab[0] + ab[1])) {
                base.add(ab[0] + ab[1]);
            }
        }
        String preferred = "etaoinsrhldcumfpgwybvkxjqzETAOINSRHLDCUMFPGWYBVKXJQZ0123456789 .,;:!?'\"-()";
        for (char c : preferred.toCharArray()) {
            String t = BYTE_TO_CHAR[c];
            if (seen.add(t)) {
                base.add(t);
            }
        }
        for (int b = 0; b < 256; b++) {
            if (seen.add(BYTE_TO_CHAR[b])) {
                base.add(BYTE_TO_CHAR[b]);
            }
        }
        List<String[]> out = new ArrayList<>(count);
        java.util.Set<String> made = new java.util.HashSet<>();
        int n = base.size();
        for (int sum = 0; sum <= 2 * (n - 1) && out.size() < count; sum++) {
            for (int i = Math.max(0, sum - (n - 1)); i <= Math.min(sum, n - 1) && out.size() < count; i++) {
                String a = base.get(i);
                String b = base.get(sum - i);
                String joined = a + b;
                if (vocab.containsKey(joined) || made.contains(joined)) {
                    continue;
                }
                made.add(joined);
                out.add(new String[]{a, b});
            }
        }
        if (out.size() < count) {
            throw new IllegalArgumentException("cannot build " + count + " filler merges (vocabulary too large)");
        }
        return out;
    }
}
