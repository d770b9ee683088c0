package io.butterfly.coordinator.api.openai;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.InvalidRequestException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * The body of OpenAI's {@code POST /v1/completions}, as its clients send it. Options Butterfly does not implement
 * are accepted at their neutral value ({@code n: 1}, {@code presence_penalty: 0}, ...) and refused otherwise, naming
 * the field, rather than silently ignored. Defaults are OpenAI's: {@code temperature} 1, {@code max_tokens} 16, and
 * a fresh seed per request unless one is given.
 *
 * @param prompt    a string, one string in a list, a list of token ids, or one such list in a list
 * @param ignoreEos not OpenAI's: vLLM's extension, as in {@code POST /api/v1/inference}
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
                                @JsonProperty("ignore_eos") Boolean ignoreEos) {

    /** OpenAI's default sampling temperature for completions. */
    static final double DEFAULT_TEMPERATURE = 1.0;

    /** {@code include_usage}: a last chunk with the usage and no choices. */
    public record StreamOptions(@JsonProperty("include_usage") Boolean includeUsage) {
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

    /**
     * The generation this asks for; {@code freshSeed} is its seed when none is given. Refuses what cannot be served
     * as asked, naming the field.
     */
    GenerationRequest generation(long freshSeed) {
        refuseUnsupported();
        if (streamOptions != null && !streaming()) {
            throw new InvalidRequestException("stream_options", "stream_options is only allowed with stream: true");
        }
        Prompt p = Prompt.of(prompt);
        return new GenerationRequest(p.text(), p.tokenIds(), maxTokens,
                temperature == null ? DEFAULT_TEMPERATURE : temperature, topP, seed == null ? freshSeed : seed,
                logprobs, ignoreEos, stop);
    }

    private void refuseUnsupported() {
        if (n != null && n != 1) {
            throw new InvalidRequestException("n", "n must be 1: one completion per request (send several requests)");
        }
        if (bestOf != null && bestOf != 1) {
            throw new InvalidRequestException("best_of", "best_of must be 1: candidates are not generated server-side");
        }
        if (Boolean.TRUE.equals(echo)) {
            throw new InvalidRequestException("echo", "echo is not supported: the answer holds the completion only");
        }
        if (suffix != null && !suffix.isEmpty()) {
            throw new InvalidRequestException("suffix", "suffix (insertion) is not supported");
        }
        if (presencePenalty != null && presencePenalty != 0) {
            throw new InvalidRequestException("presence_penalty", "presence_penalty is not supported; only 0");
        }
        if (frequencyPenalty != null && frequencyPenalty != 0) {
            throw new InvalidRequestException("frequency_penalty", "frequency_penalty is not supported; only 0");
        }
        if (logitBias != null && !logitBias.isEmpty()) {
            throw new InvalidRequestException("logit_bias", "logit_bias is not supported; only {}");
        }
    }

    /** Where token ids sit in this request's prompt, for errors found in them ({@code token_ids[i]} natively). */
    String tokenIdsField() {
        return prompt != null && prompt.isArray() && !prompt.isEmpty() && prompt.get(0).isArray() ? "prompt[0]" : "prompt";
    }

    /** The prompt in the forms OpenAI's API takes, one prompt per request. */
    record Prompt(String text, List<Long> tokenIds) {

        static Prompt of(JsonNode prompt) {
            if (prompt == null || prompt.isNull()) {
                throw new InvalidRequestException("prompt", "prompt is required");
            }
            if (prompt.isString()) {
                return new Prompt(prompt.stringValue(), null);
            }
            if (!prompt.isArray()) {
                throw new InvalidRequestException("prompt", "prompt must be a string, a list of token ids, or a list "
                        + "holding one of those");
            }
            if (prompt.isEmpty()) {
                throw new InvalidRequestException("prompt", "prompt must not be empty");
            }
            JsonNode first = prompt.get(0);
            if (first.isString() || first.isArray()) { // a batch of prompts: OpenAI's API allows it, one here
                if (prompt.size() > 1) {
                    throw new InvalidRequestException("prompt", "prompt holds " + prompt.size()
                            + " prompts; one per request is served (send several requests)");
                }
                return first.isString() ? new Prompt(first.stringValue(), null) : new Prompt(null, ids(first, "prompt[0]"));
            }
            return new Prompt(null, ids(prompt, "prompt"));
        }

        private static List<Long> ids(JsonNode array, String field) {
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
}
