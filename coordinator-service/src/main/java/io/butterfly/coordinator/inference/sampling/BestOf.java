package io.butterfly.coordinator.inference.sampling;

import java.util.Comparator;
import java.util.List;
import java.util.stream.IntStream;

/**
 * OpenAI's {@code best_of}: of the candidates generated for one prompt, the {@code n} whose tokens have the highest
 * cumulative log-probability (the sum of each chosen token's, as vLLM ranks them), best first; a tie keeps the
 * candidates' order. The candidates' seeds are derived from the request's ({@link ChoiceSeeds}), so the same request
 * (or its replay after a failure) picks the same ones.
 */
public final class BestOf {

    private BestOf() {
    }

    /** The indices of the {@code n} best of {@code candidates} (each one's tokens' log-probabilities), best first. */
    public static List<Integer> best(List<List<Double>> candidates, int n) {
        if (n < 1 || n > candidates.size()) {
            throw new IllegalArgumentException("n must be in [1, " + candidates.size() + "], got " + n);
        }
        double[] score = candidates.stream().mapToDouble(BestOf::cumulative).toArray();
        return IntStream.range(0, candidates.size()).boxed()
                .sorted(Comparator.<Integer>comparingDouble(i -> score[i]).reversed())
                .limit(n)
                .toList();
    }

    /** A candidate's cumulative log-probability. */
    public static double cumulative(List<Double> tokenLogprobs) {
        double sum = 0;
        for (double lp : tokenLogprobs) {
            sum += lp;
        }
        return sum;
    }
}
