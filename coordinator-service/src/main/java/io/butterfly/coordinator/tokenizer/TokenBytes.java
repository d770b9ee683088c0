package io.butterfly.coordinator.tokenizer;

import io.butterfly.common.model.ByteLevelAlphabet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;

/**
 * The bytes each token of a {@code tokenizer.json} writes into a decoded text before the text is read as UTF-8, where
 * its decoder says: a {@code ByteLevel} decoder (GPT-2, Llama 3, Qwen2 and the generated models) spells every byte
 * with a printable character of its own, and a {@code ByteFallback} one (SentencePiece's Llama 2, Mistral) writes a
 * {@code <0xE9>} token as that byte. A token that ends inside a character decodes to U+FFFD; these are its real
 * bytes, which the structured-output matcher walks. Tokens of other decoders, and added tokens, are not known here.
 */
final class TokenBytes {

    private static final Pattern BYTE_TOKEN = Pattern.compile("<0x([0-9A-Fa-f]{2})>");

    /** By token id; null where not known. */
    private final byte[][] bytes;

    private TokenBytes(byte[][] bytes) {
        this.bytes = bytes;
    }

    /** Reads {@code tokenizerJson}'s model vocabulary and decoder. */
    static TokenBytes of(JsonNode tokenizerJson) {
        Set<String> decoders = new HashSet<>();
        JsonNode decoder = tokenizerJson.path("decoder");
        decoders.add(decoder.path("type").asString(""));
        for (JsonNode d : decoder.path("decoders")) {
            decoders.add(d.path("type").asString(""));
        }
        boolean byteLevel = decoders.contains("ByteLevel");
        boolean byteFallback = decoders.contains("ByteFallback");
        Map<Long, byte[]> out = new HashMap<>();
        JsonNode vocab = tokenizerJson.path("model").path("vocab");
        if (vocab.isObject()) {
            for (var e : vocab.properties()) {
                put(out, e.getValue().asLong(), e.getKey(), byteLevel, byteFallback);
            }
        } else if (vocab.isArray()) { // Unigram: [piece, score] by id
            for (int id = 0; id < vocab.size(); id++) {
                put(out, id, vocab.get(id).path(0).asString(""), byteLevel, byteFallback);
            }
        }
        for (JsonNode added : tokenizerJson.path("added_tokens")) {
            out.remove(added.path("id").asLong(-1)); // written as their content, not through the decoder
        }
        byte[][] byId = new byte[out.keySet().stream().mapToInt(Long::intValue).max().orElse(-1) + 1][];
        out.forEach((id, b) -> byId[id.intValue()] = b);
        return new TokenBytes(byId);
    }

    private static void put(Map<Long, byte[]> out, long id, String token, boolean byteLevel, boolean byteFallback) {
        byte[] b = byteLevel ? fromByteLevel(token) : null;
        if (b == null && byteFallback) {
            Matcher m = BYTE_TOKEN.matcher(token);
            if (m.matches()) {
                b = new byte[]{(byte) Integer.parseInt(m.group(1), 16)};
            }
        }
        if (b != null && id >= 0 && id < 1 << 24) {
            out.put(id, b);
        }
    }

    /** The bytes of token {@code id}, or null where the decoder does not spell them. */
    byte[] of(long id) {
        return id >= 0 && id < bytes.length && bytes[(int) id] != null ? bytes[(int) id].clone() : null;
    }

    /** A byte-level token's bytes, or null if a character of it is none of the 256 byte symbols. */
    static byte[] fromByteLevel(String token) {
        if (token.isEmpty()) {
            return null;
        }
        byte[] b = new byte[token.length()];
        for (int i = 0; i < token.length(); i++) {
            int v = ByteLevelAlphabet.byteOf(token.charAt(i));
            if (v < 0) {
                return null;
            }
            b[i] = (byte) v;
        }
        return b;
    }
}
