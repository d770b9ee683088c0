package io.butterfly.coordinator.inference.sampling;

import java.util.List;

/**
 * The token picked at one step.
 *
 * @param tokenId     chosen vocabulary id
 * @param logprob     its log-probability under the raw logits (temperature 1, as OpenAI/vLLM report it)
 * @param topLogprobs the {@link SamplingParams#logprobs()} most likely tokens, descending by
 *                    log-probability, ties by token id; empty when none were asked for
 */
public record TokenChoice(int tokenId, double logprob, List<TokenLogprob> topLogprobs) {

    public TokenChoice {
        topLogprobs = List.copyOf(topLogprobs);
    }
}
