package io.butterfly.coordinator.structured;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.TreeMap;

/**
 * A model's tokens as the text each adds, in a character trie, so that the tokens a matcher state allows are found by
 * one walk that drops a whole subtree at the first character the state refuses. Built once per served model;
 * immutable and thread-safe.
 */
public final class Vocabulary {

    private final String[] texts;
    private final BitSet endTokens;
    private final TrieNode root;

    /**
     * @param texts     the text of each token id as it reads inside a generation (null or empty: never allowed, as a
     *                  special token)
     * @param endTokens the end-of-sequence tokens: allowed once the value is complete
     */
    public Vocabulary(String[] texts, BitSet endTokens) {
        this.texts = texts.clone();
        this.endTokens = (BitSet) endTokens.clone();
        Builder b = new Builder();
        for (int id = 0; id < texts.length; id++) {
            if (texts[id] != null && !texts[id].isEmpty() && !endTokens.get(id)) {
                b.add(texts[id], id);
            }
        }
        this.root = b.build();
    }

    public int size() {
        return texts.length;
    }

    /** The text of token {@code id}, or null for one never allowed. */
    public String text(int id) {
        return id >= 0 && id < texts.length ? texts[id] : null;
    }

    public boolean isEnd(int id) {
        return endTokens.get(id);
    }

    /** The tokens whose text {@code state} can read whole, and the end tokens when it accepts. */
    BitSet allowed(Grammar.State state) {
        BitSet out = new BitSet(texts.length);
        walk(root, state, out);
        if (state.accepting()) {
            out.or(endTokens);
        }
        return out;
    }

    private static void walk(TrieNode node, Grammar.State state, BitSet out) {
        for (int i = 0; i < node.chars.length; i++) {
            Grammar.State next = state.advance(node.chars[i]);
            if (next != null) {
                TrieNode child = node.children[i];
                for (int id : child.tokens) {
                    out.set(id);
                }
                walk(child, next, out);
            }
        }
    }

    /** A trie node: the characters that go on from here, in order, the node each leads to, and tokens ending here. */
    private record TrieNode(char[] chars, TrieNode[] children, int[] tokens) {
    }

    private static final class Builder {
        final TreeMap<Character, Builder> children = new TreeMap<>();
        final List<Integer> tokens = new ArrayList<>();

        void add(String text, int id) {
            Builder b = this;
            for (int i = 0; i < text.length(); i++) {
                b = b.children.computeIfAbsent(text.charAt(i), c -> new Builder());
            }
            b.tokens.add(id);
        }

        TrieNode build() {
            char[] chars = new char[children.size()];
            TrieNode[] nodes = new TrieNode[children.size()];
            int i = 0;
            for (var e : children.entrySet()) {
                chars[i] = e.getKey();
                nodes[i++] = e.getValue().build();
            }
            return new TrieNode(chars, nodes, tokens.stream().mapToInt(Integer::intValue).toArray());
        }
    }

    @Override
    public String toString() {
        return "Vocabulary[" + texts.length + " tokens, end " + endTokens + "]" + Arrays.hashCode(texts);
    }
}
