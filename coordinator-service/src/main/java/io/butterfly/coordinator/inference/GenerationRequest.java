package io.butterfly.coordinator.inference;

import java.util.List;

/**
 * An inference request as the client sent it (before validation); absent fields are null.
 *
 * @param prompt      text to tokenize, or null
 * @param tokenIds    token ids used exactly as given, or null
 * @param maxTokens   tokens to generate
 * @param temperature 0 = greedy
 * @param topP        nucleus mass
 * @param topK        draw from the k most likely tokens only (0 or null: all)
 * @param seed        sampling seed
 * @param logprobs    top-k log-probabilities per step (0..20)
 * @param ignoreEos   keep generating past the end-of-sequence token (benchmarks)
 * @param stop        strings that end the generation where its text first contains one (left out of the text)
 * @param responseFormat the answer's shape (null: free text); JSON ones are decoded under a grammar
 */
public record GenerationRequest(String prompt, List<Long> tokenIds, Integer maxTokens, Double temperature,
                                Double topP, Integer topK, Long seed, Integer logprobs,
                                Boolean ignoreEos, List<String> stop, ResponseFormat responseFormat) {

    /** A request for free text. */
    public GenerationRequest(String prompt, List<Long> tokenIds, Integer maxTokens, Double temperature,
                             Double topP, Integer topK, Long seed, Integer logprobs, Boolean ignoreEos,
                             List<String> stop) {
        this(prompt, tokenIds, maxTokens, temperature, topP, topK, seed, logprobs, ignoreEos, stop, null);
    }

    /** The answer's shape: free text unless asked. */
    public ResponseFormat format() {
        return responseFormat == null ? ResponseFormat.TEXT : responseFormat;
    }

    /** A request without a top-k cut. */
    public GenerationRequest(String prompt, List<Long> tokenIds, Integer maxTokens, Double temperature, Double topP,
                             Long seed, Integer logprobs, Boolean ignoreEos, List<String> stop) {
        this(prompt, tokenIds, maxTokens, temperature, topP, null, seed, logprobs, ignoreEos, stop);
    }

    /** A request without stop strings. */
    public GenerationRequest(String prompt, List<Long> tokenIds, Integer maxTokens, Double temperature, Double topP,
                             Long seed, Integer logprobs, Boolean ignoreEos) {
        this(prompt, tokenIds, maxTokens, temperature, topP, null, seed, logprobs, ignoreEos, null);
    }
}
