package io.butterfly.coordinator.inference.engine;

import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Sequences submitted together that share a prompt (the {@code n} choices or {@code best_of} candidates of one
 * request): each after the first follows the first's prompt ({@link Sequence#followPromptOf}), so the stages compute
 * the prompt once and the others find its full blocks in their prefix caches. A hit computes the same values as a miss
 * (docs/prefix-caching.md), so the tokens are those of sequences fed side by side.
 */
final class PromptLeaders {

    /**
     * Prompts shorter than this hold no full block of the stages' prefix caches ({@code PrefixCache.BLOCK_TOKENS}, 16,
     * plus the last token, which is always computed): their sequences do not wait for one another.
     */
    static final int MIN_SHARED_PROMPT = 17;

    private PromptLeaders() {
    }

    static void assign(List<Sequence> submitted) {
        if (submitted.size() < 2) {
            return;
        }
        Map<Key, Sequence> leaders = new HashMap<>();
        for (Sequence s : submitted) {
            if (s.promptLength() < MIN_SHARED_PROMPT) {
                continue;
            }
            Sequence leader = leaders.putIfAbsent(new Key(s.prompt()), s);
            if (leader != null) {
                s.followPromptOf(leader);
            }
        }
    }

    /** A prompt's tokens as a map key. */
    private record Key(long[] tokens) {

        @Override
        public boolean equals(Object o) {
            return o instanceof Key k && Arrays.equals(tokens, k.tokens);
        }

        @Override
        public int hashCode() {
            return Arrays.hashCode(tokens);
        }
    }
}
