package io.butterfly.coordinator.inference.sampling;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.butterfly.common.sampling.GreedyChoice;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class SamplerTest {

    /** log-probabilities [ln .5, ln .3, ln .15, ln .05]: the nucleus boundaries are known exactly. */
    private static final float[] FOUR = {(float) Math.log(0.5), (float) Math.log(0.3), (float) Math.log(0.15), (float) Math.log(0.05)};

    private static TokenChoice choose(double temperature, double topP, long seed, int logprobs, float[] logits, int step) {
        return new Sampler(new SamplingParams(temperature, topP, seed, logprobs)).choose(logits, step);
    }

    /** Independent reference: direct softmax then log, in double, no shifting tricks beyond what the range needs. */
    private static double[] referenceLogSoftmax(float[] logits) {
        double sum = 0;
        for (float l : logits) {
            sum += Math.exp(l);
        }
        double[] out = new double[logits.length];
        for (int i = 0; i < logits.length; i++) {
            out[i] = Math.log(Math.exp(logits[i]) / sum);
        }
        return out;
    }

    private static float[] randomLogits(Random random, int vocab, double scale) {
        float[] logits = new float[vocab];
        for (int i = 0; i < vocab; i++) {
            logits[i] = (float) (random.nextGaussian() * scale);
        }
        return logits;
    }

    @Test
    void greedyPicksTheArgmaxAndLowestIdOnTies() {
        float[] logits = {0.1f, 2.5f, -1f, 2.5f, Float.NEGATIVE_INFINITY};
        for (int step = 0; step < 20; step++) {
            assertEquals(1, choose(0, 1, step * 31L, 0, logits, step).tokenId());
        }
        assertEquals(0, choose(0, 1, 0, 0, new float[]{3, 3, 3}, 0).tokenId());
        assertEquals(2, new Sampler(SamplingParams.greedy()).choose(new float[]{-5, -4, -1}, 0).tokenId());
        // top_p plays no role in greedy decoding.
        assertEquals(1, choose(0, 0.01, 0, 0, logits, 0).tokenId());
    }

    @Test
    void logprobsMatchAnIndependentLogSoftmax() {
        Random random = new Random(11);
        for (int trial = 0; trial < 50; trial++) {
            float[] logits = randomLogits(random, 1 + random.nextInt(300), 4);
            double[] ref = referenceLogSoftmax(logits);
            int k = random.nextInt(25);
            double temperature = trial % 2 == 0 ? 0 : 0.3 + random.nextDouble() * 2;
            TokenChoice c = choose(temperature, 1, trial, k, logits, trial);
            assertEquals(ref[c.tokenId()], c.logprob(), 1e-12);
            assertEquals(Math.min(k, logits.length), c.topLogprobs().size());

            // Top-k: the k largest by reference, descending, ties by id.
            Integer[] order = new Integer[logits.length];
            for (int i = 0; i < order.length; i++) {
                order[i] = i;
            }
            java.util.Arrays.sort(order, (a, b) -> logits[a] != logits[b] ? Float.compare(logits[b], logits[a]) : Integer.compare(a, b));
            for (int j = 0; j < c.topLogprobs().size(); j++) {
                TokenLogprob t = c.topLogprobs().get(j);
                assertEquals(order[j], t.tokenId(), "rank " + j);
                assertEquals(ref[t.tokenId()], t.logprob(), 1e-12);
            }
        }
    }

    @Test
    void logprobsAreStableForLargeLogitsAndMaskedTokens() {
        float[] logits = {1000f, 999f, Float.NEGATIVE_INFINITY};
        TokenChoice c = choose(0, 1, 0, 3, logits, 0);
        double lse = 1000 + Math.log(1 + Math.exp(-1));
        assertEquals(0, c.tokenId());
        assertEquals(1000 - lse, c.logprob(), 1e-12);
        assertEquals(List.of(new TokenLogprob(0, 1000 - lse), new TokenLogprob(1, 999 - lse),
                new TokenLogprob(2, Double.NEGATIVE_INFINITY)), c.topLogprobs());
        // A masked token is never sampled.
        for (int seed = 0; seed < 500; seed++) {
            assertNotEquals(2, choose(5, 1, seed, 0, logits, 0).tokenId());
        }
    }

    @Test
    void topLogprobsBreakTiesByTokenIdAndAreEmptyUnlessAsked() {
        float[] logits = {1f, 3f, 3f, 2f, 3f};
        List<TokenLogprob> top = choose(0, 1, 0, 4, logits, 0).topLogprobs();
        assertEquals(List.of(1, 2, 4, 3), top.stream().map(TokenLogprob::tokenId).toList());
        assertTrue(choose(0, 1, 0, 0, logits, 0).topLogprobs().isEmpty());
        assertEquals(5, choose(0, 1, 0, 20, logits, 0).topLogprobs().size());
    }

    @Test
    void logprobsIgnoreTemperature() {
        float[] logits = randomLogits(new Random(3), 50, 2);
        TokenChoice hot = choose(7, 1, 1, 5, logits, 0);
        TokenChoice cold = choose(0, 1, 1, 5, logits, 0);
        assertEquals(cold.topLogprobs(), hot.topLogprobs());
        assertEquals(referenceLogSoftmax(logits)[hot.tokenId()], hot.logprob(), 1e-12);
    }

    @Test
    void sameSeedAndStepGiveTheSameToken() {
        Random random = new Random(5);
        float[] logits = randomLogits(random, 1000, 1);
        for (int seed = 0; seed < 50; seed++) {
            for (int step = 0; step < 10; step++) {
                // Fresh samplers, and a different step order: nothing carries over between calls.
                TokenChoice a = choose(1.0, 0.9, seed, 3, logits, step);
                TokenChoice b = choose(1.0, 0.9, seed, 3, logits, step);
                assertEquals(a, b);
            }
        }
        Sampler sampler = new Sampler(new SamplingParams(1.0, 1.0, 42, 0));
        int first = sampler.choose(logits, 3).tokenId();
        sampler.choose(logits, 4);
        sampler.choose(logits, 0);
        assertEquals(first, sampler.choose(logits, 3).tokenId(), "a replayed step samples the same token");
    }

    @Test
    void seedsAndStepsVaryTheDraw() {
        float[] logits = new float[100]; // uniform
        Set<Integer> bySeed = new HashSet<>();
        Set<Integer> byStep = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            bySeed.add(choose(1, 1, i, 0, logits, 0).tokenId());
            byStep.add(choose(1, 1, 7, 0, logits, i).tokenId());
        }
        assertTrue(bySeed.size() > 50, "seeds: " + bySeed.size());
        assertTrue(byStep.size() > 50, "steps: " + byStep.size());
    }

    @Test
    void samplingFollowsTheSoftmaxAtTemperatureOne() {
        int draws = 20000;
        int[] hits = new int[4];
        for (int seed = 0; seed < draws; seed++) {
            hits[choose(1, 1, seed, 0, FOUR, 0).tokenId()]++;
        }
        double[] expected = {0.5, 0.3, 0.15, 0.05};
        for (int i = 0; i < 4; i++) {
            assertEquals(expected[i], hits[i] / (double) draws, 0.015, "token " + i);
        }
    }

    @Test
    void topPRestrictsTheSupportToTheNucleus() {
        assertEquals(Set.of(0, 1), support(0.75, FOUR), "0.5 + 0.3 reaches 0.75");
        assertEquals(Set.of(0, 1, 2), support(0.85, FOUR), "needs the third token");
        assertEquals(Set.of(0, 1, 2, 3), support(1.0, FOUR));
        assertEquals(Set.of(0), support(0.3, FOUR), "the most likely token alone already reaches 0.3");
        // Equal probabilities: the nucleus takes the lowest ids first.
        assertEquals(Set.of(0, 1), support(0.45, new float[]{2, 2, 2, 2}));
        assertEquals(Set.of(1, 3), support(0.45, new float[]{0, 2, 0, 2, 0}));

        // Within the nucleus the mass is renormalized: 0.5 / 0.8 and 0.3 / 0.8.
        int zero = 0;
        int draws = 20000;
        for (int seed = 0; seed < draws; seed++) {
            if (choose(1, 0.75, seed, 0, FOUR, 1).tokenId() == 0) {
                zero++;
            }
        }
        assertEquals(0.625, zero / (double) draws, 0.015);

        // The chosen token's logprob is still the unfiltered one.
        TokenChoice c = choose(1, 0.75, 9, 0, FOUR, 0);
        assertEquals(referenceLogSoftmax(FOUR)[c.tokenId()], c.logprob(), 1e-12);
    }

    @Test
    void topPAppliesAfterTemperature() {
        // At temperature 0.5 the probabilities become .5^2 : .3^2 : .15^2 : .05^2, normalized .685, .247, .062, .007,
        // so top_p 0.65 keeps only the first token while at temperature 1 (.5 < .65) it keeps two.
        assertEquals(Set.of(0), supportAt(0.5, 0.65, FOUR));
        assertEquals(Set.of(0, 1), supportAt(1.0, 0.65, FOUR));
    }

    @Test
    void topKKeepsTheKMostLikelyAndAnyTiedWithTheKth() {
        assertEquals(Set.of(0), supportK(1.0, 1, 1.0, FOUR), "top_k 1 is greedy");
        assertEquals(Set.of(0, 1), supportK(1.0, 2, 1.0, FOUR));
        assertEquals(Set.of(0, 1, 2, 3), supportK(1.0, 4, 1.0, FOUR));
        assertEquals(Set.of(0, 1, 2, 3), supportK(1.0, 50, 1.0, FOUR), "k beyond the vocabulary keeps it all");
        // transformers removes only scores below the k-th: both tokens tied with it stay.
        assertEquals(Set.of(0, 2, 3), supportK(1.0, 2, 1.0, new float[]{5, 1, 3, 3}));

        // Within the top k the mass is renormalized: 0.5 / 0.8 and 0.3 / 0.8.
        int zero = 0;
        int draws = 20000;
        for (int seed = 0; seed < draws; seed++) {
            if (chooseK(1, 1.0, 2, seed, FOUR, 1).tokenId() == 0) {
                zero++;
            }
        }
        assertEquals(0.625, zero / (double) draws, 0.015);
    }

    @Test
    void topKComesBeforeTopPAsInTransformers() {
        // Top 2 of .5/.3/.15/.05 renormalize to .625/.375, so top_p 0.6 keeps the first alone; top_p first would
        // have kept two (.5 < .6).
        assertEquals(Set.of(0), supportK(1.0, 2, 0.6, FOUR));
        assertEquals(Set.of(0, 1), supportK(1.0, 0, 0.6, FOUR));
    }

    /**
     * Over random logits and settings every drawn token is one transformers' warpers keep, computed here from their
     * definitions: TopK removes scores below the k-th largest, TopP (on the softmax of what is left) removes the
     * tokens whose ascending cumulative probability stays at or under 1 - top_p (the nucleus's ties by id aside,
     * so only tokens strictly inside or outside are checked).
     */
    @Test
    void drawsStayWithinTheReferenceTopKAndTopPSets() {
        Random random = new Random(5);
        for (int trial = 0; trial < 300; trial++) {
            int vocab = 2 + random.nextInt(60);
            float[] logits = randomLogits(random, vocab, 0.5 + 3 * random.nextDouble());
            double temperature = 0.2 + 2 * random.nextDouble();
            int topK = random.nextInt(vocab + 2);
            double topP = random.nextBoolean() ? 1.0 : 0.05 + 0.95 * random.nextDouble();
            Set<Integer> allowed = referenceTopKTopP(logits, temperature, topK, topP);
            for (int seed = 0; seed < 40; seed++) {
                int token = chooseK(temperature, topP, topK, trial * 1000L + seed, logits, seed).tokenId();
                assertTrue(allowed.contains(token), "trial " + trial + ": token " + token + " outside " + allowed
                        + " (top_k " + topK + ", top_p " + topP + ", T " + temperature + ")");
            }
        }
    }

    @Test
    void kthLargestEqualsTheSortedReference() {
        Random random = new Random(9);
        for (int trial = 0; trial < 500; trial++) {
            double[] values = new double[1 + random.nextInt(200)];
            for (int i = 0; i < values.length; i++) {
                values[i] = random.nextInt(4) == 0 ? random.nextInt(5) : random.nextGaussian(); // with ties
            }
            double[] sorted = values.clone();
            java.util.Arrays.sort(sorted);
            int k = 1 + random.nextInt(values.length);
            assertEquals(sorted[values.length - k], Sampler.kthLargest(values, k), "k " + k);
        }
    }

    @Test
    void temperatureSharpensOrFlattens() {
        float[] logits = randomLogits(new Random(17), 20, 1.5);
        int argmax = choose(0, 1, 0, 0, logits, 0).tokenId();
        double cold = argmaxRate(0.05, logits, argmax);
        double warm = argmaxRate(1.0, logits, argmax);
        double hot = argmaxRate(100, logits, argmax);
        assertTrue(cold > 0.99, "cold " + cold);
        assertTrue(cold > warm && warm > hot, cold + " > " + warm + " > " + hot);
        assertEquals(1.0 / 20, hot, 0.02, "very high temperature is close to uniform");
        // An extremely small temperature degenerates to greedy instead of producing NaN.
        assertEquals(argmax, choose(1e-300, 1, 3, 0, logits, 0).tokenId());
    }

    @Test
    void rejectsInvalidInput() {
        Sampler sampler = new Sampler(new SamplingParams(1, 1, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> sampler.choose(new float[0], 0));
        assertThrows(IllegalArgumentException.class, () -> sampler.choose(new float[]{1, Float.NaN}, 0));
        assertThrows(IllegalArgumentException.class, () -> sampler.choose(new float[]{1, Float.POSITIVE_INFINITY}, 0));
        assertThrows(IllegalArgumentException.class,
                () -> sampler.choose(new float[]{Float.NEGATIVE_INFINITY, Float.NEGATIVE_INFINITY}, 0));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(-0.1, 1, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(Double.NaN, 1, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(1, 0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(1, 1.01, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(1, 1, 0, -1));
        assertThrows(IllegalArgumentException.class, () -> new SamplingParams(1, 1, -1, 0, 0));
    }

    private static TokenChoice chooseK(double temperature, double topP, int topK, long seed, float[] logits, int step) {
        return new Sampler(new SamplingParams(temperature, topP, topK, seed, 0)).choose(logits, step);
    }

    private static Set<Integer> supportK(double temperature, int topK, double topP, float[] logits) {
        Set<Integer> seen = new HashSet<>();
        for (int seed = 0; seed < 3000; seed++) {
            seen.add(chooseK(temperature, topP, topK, seed, logits, seed % 7).tokenId());
        }
        return seen;
    }

    /** Tokens transformers' TopK then TopP warpers may keep (boundary ties included), from their definitions. */
    private static Set<Integer> referenceTopKTopP(float[] logits, double temperature, int topK, double topP) {
        int v = logits.length;
        double[] scores = new double[v];
        for (int i = 0; i < v; i++) {
            scores[i] = logits[i] / temperature;
        }
        if (topK > 0 && topK < v) {
            double[] sorted = scores.clone();
            java.util.Arrays.sort(sorted);
            double kth = sorted[v - topK];
            for (int i = 0; i < v; i++) {
                if (scores[i] < kth) {
                    scores[i] = Double.NEGATIVE_INFINITY;
                }
            }
        }
        double sum = 0;
        for (double s : scores) {
            sum += Math.exp(s);
        }
        Set<Integer> allowed = new HashSet<>();
        for (int i = 0; i < v; i++) {
            double pi = Math.exp(scores[i]) / sum;
            if (pi == 0) {
                continue;
            }
            // Mass strictly more likely than token i: if that alone reaches top_p, i is outside any nucleus.
            double above = 0;
            for (int j = 0; j < v; j++) {
                double pj = Math.exp(scores[j]) / sum;
                if (pj > pi) {
                    above += pj;
                }
            }
            if (above < topP * (1 + 1e-9) || topP >= 1.0) {
                allowed.add(i);
            }
        }
        return allowed;
    }

    private static Set<Integer> support(double topP, float[] logits) {
        return supportAt(1.0, topP, logits);
    }

    private static Set<Integer> supportAt(double temperature, double topP, float[] logits) {
        Set<Integer> seen = new HashSet<>();
        for (int seed = 0; seed < 3000; seed++) {
            seen.add(choose(temperature, topP, seed, 0, logits, seed % 7).tokenId());
        }
        return seen;
    }

    private static double argmaxRate(double temperature, float[] logits, int argmax) {
        int hits = 0;
        int draws = 5000;
        for (int seed = 0; seed < draws; seed++) {
            if (choose(temperature, 1, seed, 0, logits, 0).tokenId() == argmax) {
                hits++;
            }
        }
        return hits / (double) draws;
    }

    @Test
    void aGreedySummaryChoosesExactlyWhatTheWholeRowDoes() {
        Random random = new Random(20261202);
        for (int trial = 0; trial < 200; trial++) {
            int vocab = 1 + random.nextInt(500);
            float[] logits = randomLogits(random, vocab, 1 + random.nextInt(8));
            if (random.nextBoolean()) { // ties and masked tokens
                logits[random.nextInt(vocab)] = logits[random.nextInt(vocab)];
                logits[random.nextInt(vocab)] = Float.NEGATIVE_INFINITY;
                if (Float.isInfinite(logits[GreedyChoice.argmax(logits, 0, vocab)])) {
                    logits[0] = 0;
                }
            }
            int logprobs = random.nextInt(21);
            Sampler sampler = new Sampler(new SamplingParams(0, 1, trial, logprobs));
            // The summary travels inside a longer buffer of rows, as in a batch.
            int offset = random.nextInt(3) * vocab;
            float[] rows = new float[offset + vocab + random.nextInt(7)];
            System.arraycopy(logits, 0, rows, offset, vocab);
            GreedyChoice summary = GreedyChoice.of(rows, offset, vocab, logprobs);
            assertEquals(sampler.choose(logits, trial), sampler.choose(summary), "trial " + trial);
        }
    }

    @Test
    void aSampledSequenceNeverTakesASummary() {
        GreedyChoice summary = GreedyChoice.of(new float[]{1, 2, 3}, 0, 3, 1);
        assertThrows(IllegalStateException.class, () -> new Sampler(new SamplingParams(0.7, 1, 1, 0)).choose(summary));
    }
}
