package io.butterfly.coordinator.inference;

import java.util.List;

/**
 * Strings that end a generation where its text first contains one, as OpenAI's and vLLM's {@code stop}: the text
 * ends before the string, the tokens that formed it stay in the answer's token ids.
 */
public final class StopSequences {

    public static final StopSequences NONE = new StopSequences(List.of());

    private final List<String> strings;

    StopSequences(List<String> strings) {
        this.strings = List.copyOf(strings);
    }

    boolean isEmpty() {
        return strings.isEmpty();
    }

    /**
     * Where the stop string that {@code text} first contains begins: of the matches ending after {@code from}, the one
     * that ends first (so the answer does not depend on how tokens split the text), the longer on a tie; -1 if none.
     */
    int find(String text, int from) {
        int start = -1;
        int end = Integer.MAX_VALUE;
        for (String s : strings) {
            int i = text.indexOf(s, Math.max(0, from - s.length() + 1));
            if (i >= 0 && (i + s.length() < end || i + s.length() == end && i < start)) {
                start = i;
                end = i + s.length();
            }
        }
        return start;
    }

    /** The length of the longest end of {@code text} that a stop string begins with (text a later token may complete). */
    int pendingPrefix(String text) {
        int longest = 0;
        for (String s : strings) {
            for (int n = Math.min(s.length() - 1, text.length()); n > longest; n--) {
                if (text.regionMatches(text.length() - n, s, 0, n)) {
                    longest = n;
                    break;
                }
            }
        }
        return longest;
    }
}
