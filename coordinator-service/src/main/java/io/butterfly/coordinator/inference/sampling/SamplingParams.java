package io.butterfly.coordinator.inference.sampling;

/**
 * How the next token is picked.
 *
 * @param temperature 0 for greedy argmax, otherwise the softmax temperature
 * @param topP        nucleus mass in (0, 1]; 1 keeps the whole vocabulary
 * @param topK        only the k most likely tokens (and any tied with the k-th) are drawn from; 0 keeps them all
 * @param seed        seed of the per-step random draws (same seed and step, same token)
 * @param logprobs    how many top log-probabilities to report per step (0 for none)
 */
public record SamplingParams(double temperature, double topP, int topK, long seed, int logprobs) {

    /** Without a top-k cut. */
    public SamplingParams(double temperature, double topP, long seed, int logprobs) {
        this(temperature, topP, 0, seed, logprobs);
    }

    public SamplingParams {
        if (!(temperature >= 0) || Double.isInfinite(temperature)) {
            throw new IllegalArgumentException("temperature must be finite and >= 0, got " + temperature);
        }
        if (!(topP > 0 && topP <= 1)) {
            throw new IllegalArgumentException("topP must be in (0, 1], got " + topP);
        }
        if (topK < 0) {
            throw new IllegalArgumentException("topK must not be negative (0 keeps every token), got " + topK);
        }
        if (logprobs < 0) {
            throw new IllegalArgumentException("logprobs must not be negative, got " + logprobs);
        }
    }

    /** Greedy decoding without reported alternatives. */
    public static SamplingParams greedy() {
        return new SamplingParams(0.0, 1.0, 0L, 0);
    }

    public boolean isGreedy() {
        return temperature == 0.0;
    }
}
