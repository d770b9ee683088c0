package io.butterfly.coordinator.inference.sampling;

import io.butterfly.common.sampling.GreedyChoice;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Picks the next token from the last stage's float32 logits.
 *
 * <p>Temperature 0 is greedy argmax (lowest id wins ties). Otherwise the token is drawn from
 * softmax(logits / temperature), restricted first to the top_k most likely tokens (with any tied with the k-th, as
 * transformers' TopKLogitsWarper keeps them) and then to the nucleus (smallest set of the most likely remaining
 * tokens whose mass reaches top_p), in transformers' order. The random number of a step is derived from
 * {@code (seed, step)} alone, not
 * from a generator advanced across steps, so a replayed or retried step draws the same token and a
 * single-process run reproduces a distributed one exactly.
 *
 * <p>All arithmetic is in double and independent of thread count or iteration order, so identical
 * logits always give identical results. Instances hold no mutable state and are thread-safe.
 */
public final class Sampler {

    private final SamplingParams params;

    public Sampler(SamplingParams params) {
        if (params == null) {
            throw new IllegalArgumentException("params must not be null");
        }
        this.params = params;
    }

    public SamplingParams params() {
        return params;
    }

    /**
     * @param logits one row of vocabulary logits; -infinity masks a token, NaN and +infinity are rejected
     * @param step   generation step (0 = the token after the prompt); part of the random seed
     */
    public TokenChoice choose(float[] logits, int step) {
        double logZ = logSumExp(logits);
        int token = params.isGreedy() ? argmax(logits) : sample(logits, step);
        return new TokenChoice(token, logits[token] - logZ, topLogprobs(logits, logZ, params.logprobs()));
    }

    /** log(sum(exp(logits))) in double, shifted by the max for stability; validates the logits. */
    static double logSumExp(float[] logits) {
        return GreedyChoice.logSumExp(logits, 0, logits == null ? 0 : logits.length);
    }

    static int argmax(float[] logits) {
        return GreedyChoice.argmax(logits, 0, logits.length);
    }

    /**
     * The choice a greedy sequence's last stage summarized ({@link GreedyChoice}): the same token and
     * log-probabilities as {@link #choose} gives from the whole row.
     */
    public TokenChoice choose(GreedyChoice greedy) {
        if (!params.isGreedy()) {
            throw new IllegalStateException("a greedy summary for a sampled sequence");
        }
        int k = Math.min(params.logprobs(), greedy.topIds().length);
        List<TokenLogprob> top = new ArrayList<>(k);
        for (int j = 0; j < k; j++) {
            top.add(new TokenLogprob(greedy.topIds()[j], greedy.topLogits()[j] - greedy.logZ()));
        }
        return new TokenChoice(greedy.token(), greedy.logit() - greedy.logZ(), top);
    }

    /** Uniform draw in [0, 1) for this (seed, step), identical on every run and every machine. */
    static double uniform(long seed, int step) {
        // Mix the seed first so that neighbouring seeds and steps do not share streams.
        long mixed = new SplittableRandom(seed).nextLong() ^ (0x9E3779B97F4A7C15L * (step + 1L));
        return new SplittableRandom(mixed).nextDouble();
    }

    private int sample(float[] logits, int step) {
        int v = logits.length;
        double invT = 1.0 / params.temperature(); // may overflow to infinity for tiny temperatures
        float max = logits[argmax(logits)];
        double[] p = new double[v];
        double total = 0;
        for (int i = 0; i < v; i++) {
            // Shift before scaling so an infinite 1/T cannot produce 0 * infinity; the max gets weight 1.
            double d = (double) logits[i] - max;
            p[i] = d == 0 ? 1.0 : Math.exp(d * invT);
            total += p[i];
        }
        if (params.topK() > 0 && params.topK() < v) {
            double kth = kthLargest(p, params.topK());
            total = 0;
            for (int i = 0; i < v; i++) {
                if (p[i] < kth) {
                    p[i] = 0;
                }
                total += p[i];
            }
        }
        double u = uniform(params.seed(), step);
        if (params.topP() >= 1.0) {
            return pick(p, identity(v), v, u * total);
        }
        // Nucleus: the shortest run of most likely tokens (ties by id) whose mass reaches top_p. Only the
        // cut-off probability is needed, so sort primitive values instead of an index permutation (~10x faster
        // for large vocabularies); drawing then walks the kept tokens in id order, which is just as exact.
        double[] sorted = p.clone();
        Arrays.sort(sorted); // ascending
        double threshold = params.topP() * total;
        double mass = 0;
        int kept = 0;
        while (kept < v && (kept == 0 || mass < threshold)) {
            mass += sorted[v - 1 - kept++];
        }
        double cutoff = sorted[v - kept];
        int tiesLeft = 0;
        for (int j = v - kept; j < v && sorted[j] == cutoff; j++) {
            tiesLeft++;
        }
        int[] members = new int[kept];
        int n = 0;
        double keptMass = 0;
        for (int i = 0; i < v && n < kept; i++) {
            if (p[i] > cutoff || (p[i] == cutoff && tiesLeft-- > 0)) {
                members[n++] = i;
                keptMass += p[i];
            }
        }
        return pick(p, members, n, u * keptMass);
    }

    /**
     * The k-th largest of {@code values} (1 <= k <= length), through a min-heap of the k largest seen so far:
     * O(n log k) without sorting the vocabulary (top_k is usually tens against tens of thousands of tokens).
     */
    static double kthLargest(double[] values, int k) {
        double[] heap = new double[k];
        for (int i = 0; i < k; i++) {
            heap[i] = values[i];
            for (int c = i; c > 0 && heap[(c - 1) / 2] > heap[c]; c = (c - 1) / 2) {
                swap(heap, c, (c - 1) / 2);
            }
        }
        for (int i = k; i < values.length; i++) {
            if (values[i] > heap[0]) {
                heap[0] = values[i];
                for (int c = 0; ; ) {
                    int smallest = c;
                    int l = 2 * c + 1;
                    int r = l + 1;
                    if (l < k && heap[l] < heap[smallest]) {
                        smallest = l;
                    }
                    if (r < k && heap[r] < heap[smallest]) {
                        smallest = r;
                    }
                    if (smallest == c) {
                        break;
                    }
                    swap(heap, c, smallest);
                    c = smallest;
                }
            }
        }
        return heap[0];
    }

    private static void swap(double[] a, int i, int j) {
        double t = a[i];
        a[i] = a[j];
        a[j] = t;
    }

    /** The first of {@code order[0..n)} at which the running mass exceeds {@code target}. */
    private static int pick(double[] p, int[] order, int n, double target) {
        double acc = 0;
        int lastPositive = order[0];
        for (int k = 0; k < n; k++) {
            int i = order[k];
            if (p[i] > 0) {
                acc += p[i];
                lastPositive = i;
                if (target < acc) {
                    return i;
                }
            }
        }
        return lastPositive; // rounding left target at the very top of the mass
    }

    private static int[] identity(int n) {
        int[] out = new int[n];
        for (int i = 0; i < n; i++) {
            out[i] = i;
        }
        return out;
    }

    /** The k most likely tokens under the raw logits, descending by log-probability, ties by id. */
    static List<TokenLogprob> topLogprobs(float[] logits, double logZ, int k) {
        int[] best = GreedyChoice.top(logits, 0, logits.length, k);
        List<TokenLogprob> out = new ArrayList<>(best.length);
        for (int id : best) {
            out.add(new TokenLogprob(id, logits[id] - logZ));
        }
        return out;
    }
}
