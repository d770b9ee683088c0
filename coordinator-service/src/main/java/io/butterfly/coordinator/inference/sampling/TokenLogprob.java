package io.butterfly.coordinator.inference.sampling;

/**
 * A token and its log-probability under the model's raw distribution (temperature 1).
 *
 * @param tokenId vocabulary id
 * @param logprob natural-log probability, at most 0
 */
public record TokenLogprob(int tokenId, double logprob) {
}
