package io.butterfly.coordinator.structured;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.TreeMap;

/**
 * A model's tokens as the bytes each adds to the generation's UTF-8 text, in a byte trie, so that the tokens a matcher
 * state allows are found by one walk that drops a whole subtree at the first byte the state refuses. A token may spell
 * part of a character (a byte-level BPE's byte tokens): the grammar reads bytes, so the next token may complete it.
 * Built once per served model; immutable and thread-safe.
 */
public final class Vocabulary {

    private final byte[][] tokens;
    private final BitSet endTokens;
    private final TrieNode root;

    /**
     * @param tokens    the bytes of each token id as they read inside a generation (null or empty: never allowed, as a
     *                  special token)
     * @param endTokens the end-of-sequence tokens: allowed once the value is complete
     */
    public Vocabulary(byte[][] tokens, BitSet endTokens) {
        this.tokens = new byte[tokens.length][];
        this.endTokens = (BitSet) endTokens.clone();
        Builder b = new Builder();
        for (int id = 0; id < tokens.length; id++) {
            if (tokens[id] != null && tokens[id].length > 0 && !endTokens.get(id)) {
                this.tokens[id] = tokens[id].clone();
                b.add(tokens[id], id);
            }
        }
        this.root = b.build();
    }

    /** A vocabulary of whole-character tokens: each token's text as UTF-8. */
    public static Vocabulary ofTexts(String[] texts, BitSet endTokens) {
        byte[][] bytes = new byte[texts.length][];
        for (int id = 0; id < texts.length; id++) {
            bytes[id] = texts[id] == null ? null : texts[id].getBytes(StandardCharsets.UTF_8);
        }
        return new Vocabulary(bytes, endTokens);
    }

    public int size() {
        return tokens.length;
    }

    /** The bytes of token {@code id}, or null for one never allowed (an end token, a special token). */
    public byte[] bytes(int id) {
        return id >= 0 && id < tokens.length && tokens[id] != null ? tokens[id].clone() : null;
    }

    /** The bytes of token {@code id} (not to be changed), or null. */
    byte[] spelling(int id) {
        return id >= 0 && id < tokens.length ? tokens[id] : null;
    }

    public boolean isEnd(int id) {
        return endTokens.get(id);
    }

    /** The tokens whose bytes {@code state} can read whole, and the end tokens when it accepts. */
    BitSet allowed(Grammar.State state) {
        BitSet out = new BitSet(tokens.length);
        walk(root, state, out);
        if (state.accepting()) {
            out.or(endTokens);
        }
        return out;
    }

    private static void walk(TrieNode node, Grammar.State state, BitSet out) {
        for (int i = 0; i < node.bytes.length; i++) {
            Grammar.State next = state.advance(node.bytes[i]);
            if (next != null) {
                TrieNode child = node.children[i];
                for (int id : child.tokens) {
                    out.set(id);
                }
                walk(child, next, out);
            }
        }
    }

    /** A trie node: the bytes that go on from here, in order, the node each leads to, and tokens ending here. */
    private record TrieNode(byte[] bytes, TrieNode[] children, int[] tokens) {
    }

    private static final class Builder {
        final TreeMap<Integer, Builder> children = new TreeMap<>();
        final List<Integer> tokens = new ArrayList<>();

        void add(byte[] token, int id) {
            Builder b = this;
            for (byte x : token) {
                b = b.children.computeIfAbsent(x & 0xFF, c -> new Builder());
            }
            b.tokens.add(id);
        }

        TrieNode build() {
            byte[] bytes = new byte[children.size()];
            TrieNode[] nodes = new TrieNode[children.size()];
            int i = 0;
            for (var e : children.entrySet()) {
                bytes[i] = (byte) (int) e.getKey();
                nodes[i++] = e.getValue().build();
            }
            return new TrieNode(bytes, nodes, tokens.stream().mapToInt(Integer::intValue).toArray());
        }
    }

    @Override
    public String toString() {
        return "Vocabulary[" + tokens.length + " tokens, end " + endTokens + "]";
    }
}
