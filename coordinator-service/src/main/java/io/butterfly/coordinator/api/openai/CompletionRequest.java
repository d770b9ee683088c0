package io.butterfly.coordinator.api.openai;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.ResponseFormat;
import io.butterfly.coordinator.inference.sampling.ChoiceSeeds;
import io.butterfly.coordinator.inference.InvalidRequestException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * The body of OpenAI's {@code POST /v1/completions}, as its clients send it. Options Butterfly does not implement
 * (OpenAI's, and the vLLM extensions its benchmarks and LiteLLM send) are accepted at their neutral value
 * ({@code n: 1}, {@code repetition_penalty: 1}, ...) and refused otherwise, naming the field, rather than silently
 * ignored. Defaults are OpenAI's: {@code temperature} 1, {@code max_tokens} 16, and a fresh seed per request unless
 * one is given.
 *
 * @param prompt    a string, a list of token ids, or a list of either (several prompts, each its own choice)
 * @param logprobs  null: no logprobs object; 0 to 20: the chosen tokens' and that many most likely ones (the native
 *                  API's {@code logprobs} reports top-k only when above 0)
 * @param ignoreEos vLLM's extension, as in {@code POST /api/v1/inference}
 */
public record CompletionRequest(String model,
                                JsonNode prompt,
                                @JsonProperty("max_tokens") Integer maxTokens,
                                Double temperature,
                                @JsonProperty("top_p") Double topP,
                                Long seed,
                                @JsonFormat(with = JsonFormat.Feature.ACCEPT_SINGLE_VALUE_AS_ARRAY) List<String> stop,
                                Integer logprobs,
                                Boolean stream,
                                @JsonProperty("stream_options") StreamOptions streamOptions,
                                Integer n,
                                @JsonProperty("best_of") Integer bestOf,
                                Boolean echo,
                                String suffix,
                                @JsonProperty("presence_penalty") Double presencePenalty,
                                @JsonProperty("frequency_penalty") Double frequencyPenalty,
                                @JsonProperty("logit_bias") Map<String, Double> logitBias,
                                String user,
                                @JsonProperty("ignore_eos") Boolean ignoreEos,
                                @JsonProperty("repetition_penalty") Double repetitionPenalty,
                                @JsonProperty("top_k") Integer topK,
                                @JsonProperty("min_p") Double minP,
                                @JsonProperty("min_tokens") Integer minTokens,
                                @JsonProperty("stop_token_ids") List<Long> stopTokenIds,
                                @JsonProperty("skip_special_tokens") Boolean skipSpecialTokens,
                                @JsonProperty("include_stop_str_in_output") Boolean includeStopStrInOutput,
                                @JsonProperty("add_special_tokens") Boolean addSpecialTokens,
                                @JsonProperty("response_format") JsonNode responseFormat) {

    /** Choices per prompt ({@code n}). */
    int choices() {
        return n == null ? 1 : n;
    }

    /** Candidates generated per prompt ({@code best_of}, n unless given), of which the {@code n} best are returned. */
    int candidates() {
        return bestOf == null ? choices() : bestOf;
    }

    /** OpenAI's default sampling temperature for completions. */
    static final double DEFAULT_TEMPERATURE = 1.0;
    /** Prompts one request may hold (LangChain sends up to 20 at once). */
    static final int MAX_PROMPTS = 32;

    /** {@code include_usage}: a last chunk with the usage and no choices. */
    public record StreamOptions(@JsonProperty("include_usage") Boolean includeUsage,
                                @JsonProperty("continuous_usage_stats") Boolean continuousUsageStats) {
    }

    /**
     * One prompt of the request: its text or token ids, and where it sits in the body ({@code prompt} or
     * {@code prompt[i]}), for errors found in it.
     */
    record Prompt(String text, List<Long> tokenIds, String field) {
    }

    boolean streaming() {
        return Boolean.TRUE.equals(stream);
    }

    boolean includeUsage() {
        return streamOptions != null && Boolean.TRUE.equals(streamOptions.includeUsage());
    }

    boolean withLogprobs() {
        return logprobs != null;
    }

    /** The prompts this asks to complete, each its own choice; refuses what cannot be served as asked. */
    List<Prompt> prompts() {
        refuseUnsupported();
        List<Prompt> prompts = parsePrompts(prompt);
        if (prompts.size() * candidates() > MAX_PROMPTS) {
            String field = candidates() > choices() ? "best_of" : "n";
            throw new InvalidRequestException(field, prompts.size() + " prompts of " + candidates() + " " + (
                    field.equals("n") ? "choices" : "candidates") + " each make more than " + MAX_PROMPTS);
        }
        if (streaming() && prompts.size() > 1) {
            throw new InvalidRequestException("prompt", "prompt holds " + prompts.size()
                    + " prompts; a streamed request takes one (send one stream per prompt)");
        }
        return prompts;
    }

    /** The generation that completes {@code p}; {@code freshSeed} is its seed when the request gives none. */
    GenerationRequest generation(Prompt p, long freshSeed) {
        return generation(p, freshSeed, 0);
    }

    /** Choice {@code index} (of {@link #choices()}) of {@code p}: its seed derived from the request's. */
    GenerationRequest generation(Prompt p, long freshSeed, int index) {
        return new GenerationRequest(p.text(), p.tokenIds(), maxTokens,
                temperature == null ? DEFAULT_TEMPERATURE : temperature, topP, topK == null || topK == -1 ? null : topK,
                ChoiceSeeds.of(seed == null ? freshSeed : seed, index), logprobs, ignoreEos, stop,
                ResponseFormat.parse(responseFormat, "response_format"));
    }

    private void refuseUnsupported() {
        if (n != null && (n < 1 || n > ChoiceSeeds.MAX_CHOICES)) {
            throw new InvalidRequestException("n", "n must be in [1, " + ChoiceSeeds.MAX_CHOICES + "], got " + n);
        }
        if (bestOf != null && (bestOf < choices() || bestOf > ChoiceSeeds.MAX_CHOICES)) {
            throw new InvalidRequestException("best_of", "best_of must be in [n, " + ChoiceSeeds.MAX_CHOICES + "] (n = "
                    + choices() + "), got " + bestOf);
        }
        requireNeutral("best_of", candidates() == choices() || !streaming(), "best_of > n cannot be streamed: the best"
                + " candidates are known only once all have ended");
        requireNeutral("echo", !Boolean.TRUE.equals(echo), "echo is not supported: the answer holds the completion only");
        requireNeutral("suffix", suffix == null || suffix.isEmpty(), "suffix (insertion) is not supported");
        requireNeutral("presence_penalty", presencePenalty == null || presencePenalty == 0,
                "presence_penalty is not supported; only 0");
        requireNeutral("frequency_penalty", frequencyPenalty == null || frequencyPenalty == 0,
                "frequency_penalty is not supported; only 0");
        requireNeutral("logit_bias", logitBias == null || logitBias.isEmpty(), "logit_bias is not supported; only {}");
        requireNeutral("repetition_penalty", repetitionPenalty == null || repetitionPenalty == 1,
                "repetition_penalty is not supported; only 1");
        if (topK != null && topK < -1) { // vLLM's -1 (and 0) mean every token
            throw new InvalidRequestException("top_k", "top_k must be a number of tokens, or -1 or 0 for all of them, got "
                    + topK);
        }
        requireNeutral("min_p", minP == null || minP == 0, "min_p is not supported; only 0");
        requireNeutral("min_tokens", minTokens == null || minTokens == 0, "min_tokens is not supported; only 0");
        requireNeutral("stop_token_ids", stopTokenIds == null || stopTokenIds.isEmpty(),
                "stop_token_ids is not supported: use stop (strings); the model's end-of-sequence tokens always stop");
        requireNeutral("skip_special_tokens", !Boolean.FALSE.equals(skipSpecialTokens),
                "skip_special_tokens must be true: special tokens are left out of the text");
        requireNeutral("include_stop_str_in_output", !Boolean.TRUE.equals(includeStopStrInOutput),
                "include_stop_str_in_output must be false: the text ends before a stop string");
        requireNeutral("add_special_tokens", !Boolean.FALSE.equals(addSpecialTokens),
                "add_special_tokens must be true: a text prompt is tokenized as the tokenizer is configured (give "
                        + "token ids to choose them exactly)");
        if (streamOptions != null && !streaming()) {
            throw new InvalidRequestException("stream_options", "stream_options is only allowed with stream: true");
        }
        requireNeutral("stream_options.continuous_usage_stats",
                streamOptions == null || !Boolean.TRUE.equals(streamOptions.continuousUsageStats()),
                "stream_options.continuous_usage_stats is not supported; the usage comes once, at the end");
    }

    private static void requireNeutral(String field, boolean neutral, String message) {
        if (!neutral) {
            throw new InvalidRequestException(field, message);
        }
    }

    /** The prompt in the forms OpenAI's API takes. */
    static List<Prompt> parsePrompts(JsonNode prompt) {
        if (prompt == null || prompt.isNull()) {
            throw new InvalidRequestException("prompt", "prompt is required");
        }
        if (prompt.isString()) {
            return List.of(new Prompt(prompt.stringValue(), null, "prompt"));
        }
        if (!prompt.isArray()) {
            throw new InvalidRequestException("prompt", "prompt must be a string, a list of token ids, or a list of "
                    + "those");
        }
        if (prompt.isEmpty()) {
            throw new InvalidRequestException("prompt", "prompt must not be empty");
        }
        JsonNode first = prompt.get(0);
        if (!first.isString() && !first.isArray()) {
            return List.of(new Prompt(null, ids(prompt, "prompt"), "prompt"));
        }
        if (prompt.size() > MAX_PROMPTS) {
            throw new InvalidRequestException("prompt", "prompt holds " + prompt.size() + " prompts, more than the "
                    + MAX_PROMPTS + " one request may hold");
        }
        List<Prompt> prompts = new ArrayList<>(prompt.size());
        for (int i = 0; i < prompt.size(); i++) {
            JsonNode p = prompt.get(i);
            String field = "prompt[" + i + "]";
            if (p.isString()) {
                prompts.add(new Prompt(p.stringValue(), null, field));
            } else if (p.isArray()) {
                prompts.add(new Prompt(null, ids(p, field), field));
            } else {
                throw new InvalidRequestException(field, "each prompt of a list must be a string or a list of token "
                        + "ids, got " + p);
            }
        }
        return prompts;
    }

    private static List<Long> ids(JsonNode array, String field) {
        if (array.isEmpty()) {
            throw new InvalidRequestException(field, field + " must not be empty");
        }
        List<Long> ids = new ArrayList<>(array.size());
        for (int i = 0; i < array.size(); i++) {
            JsonNode id = array.get(i);
            if (!id.isIntegralNumber() || !id.canConvertToLong()) {
                throw new InvalidRequestException(field + "[" + i + "]", "a token id must be an integer, got " + id);
            }
            ids.add(id.longValue());
        }
        return ids;
    }
}
