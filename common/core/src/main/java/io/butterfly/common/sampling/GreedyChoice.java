package io.butterfly.common.sampling;

import java.util.Arrays;

/**
 * All that greedy decoding takes from a row of logits: the most likely token (the lowest id among equals), its logit,
 * the row's log-sum-exp (for its log-probability), and the {@code n} most likely tokens with their logits (for
 * {@code logprobs}). The last stage sends this instead of the row when a sequence decodes greedily (a row of a
 * 128k-token vocabulary is half a megabyte a token), and the coordinator samples from it as from the row: both sides
 * compute it with this one class, so the token and its log-probabilities are the same bits either way.
 *
 * @param token     the argmax (lowest id wins ties)
 * @param logit     its logit
 * @param logZ      log(sum(exp(logits))), in double, shifted by the max (the coordinator's sampler's)
 * @param topIds    the {@code n} most likely tokens, descending by logit, ties by id
 * @param topLogits their logits
 */
public record GreedyChoice(int token, float logit, double logZ, int[] topIds, float[] topLogits) {

    public GreedyChoice {
        if (topIds.length != topLogits.length) {
            throw new IllegalArgumentException(topIds.length + " top ids for " + topLogits.length + " logits");
        }
    }

    /**
     * The choice of a row of {@code length} logits from {@code from} in {@code logits}.
     *
     * @param alternatives how many of the most likely tokens to keep (0 or more)
     * @throws IllegalArgumentException if a logit is NaN or +infinity, or every one is -infinity
     */
    public static GreedyChoice of(float[] logits, int from, int length, int alternatives) {
        double logZ = logSumExp(logits, from, length);
        int best = argmax(logits, from, length);
        int[] top = top(logits, from, length, alternatives);
        float[] values = new float[top.length];
        for (int j = 0; j < top.length; j++) {
            values[j] = logits[from + top[j]];
        }
        return new GreedyChoice(best, logits[from + best], logZ, top, values);
    }

    /** log(sum(exp(logits))) in double, shifted by the max for stability; validates the logits. */
    public static double logSumExp(float[] logits, int from, int length) {
        if (length <= 0) {
            throw new IllegalArgumentException("logits must not be empty");
        }
        double max = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < length; i++) {
            float v = logits[from + i];
            if (Float.isNaN(v) || v == Float.POSITIVE_INFINITY) {
                throw new IllegalArgumentException("logit " + i + " is " + v);
            }
            max = Math.max(max, v);
        }
        if (max == Double.NEGATIVE_INFINITY) {
            throw new IllegalArgumentException("every logit is -infinity");
        }
        double sum = 0;
        for (int i = 0; i < length; i++) {
            sum += Math.exp(logits[from + i] - max);
        }
        return max + Math.log(sum);
    }

    /** The index of the largest logit; the lowest index wins ties. */
    public static int argmax(float[] logits, int from, int length) {
        int best = 0;
        for (int i = 1; i < length; i++) {
            if (logits[from + i] > logits[from + best]) { // strict: the lowest id wins ties
                best = i;
            }
        }
        return best;
    }

    /** The indexes of the {@code k} largest logits, descending, ties by index. */
    public static int[] top(float[] logits, int from, int length, int k) {
        k = Math.min(k, length);
        if (k <= 0) {
            return new int[0];
        }
        // Insertion into a small sorted buffer: k is at most a few dozen, the vocabulary is large.
        int[] best = new int[k];
        int size = 0;
        for (int i = 0; i < length; i++) {
            if (size == k && !(logits[from + i] > logits[from + best[k - 1]])) {
                continue; // not better than the current k-th (an equal logit loses: larger id)
            }
            int pos = size < k ? size++ : k - 1;
            while (pos > 0 && logits[from + i] > logits[from + best[pos - 1]]) {
                best[pos] = best[pos - 1];
                pos--;
            }
            best[pos] = i;
        }
        return Arrays.copyOf(best, size);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof GreedyChoice g && token == g.token && Float.floatToIntBits(logit) == Float.floatToIntBits(g.logit)
                && Double.doubleToLongBits(logZ) == Double.doubleToLongBits(g.logZ) && Arrays.equals(topIds, g.topIds)
                && Arrays.equals(topLogits, g.topLogits);
    }

    @Override
    public int hashCode() {
        return 31 * (31 * token + Arrays.hashCode(topIds)) + Double.hashCode(logZ);
    }

    @Override
    public String toString() {
        return "GreedyChoice[token=" + token + ", logit=" + logit + ", logZ=" + logZ + ", top=" + Arrays.toString(topIds) + "]";
    }
}
