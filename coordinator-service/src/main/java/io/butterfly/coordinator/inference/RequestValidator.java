package io.butterfly.coordinator.inference;

import io.butterfly.coordinator.inference.sampling.SamplingParams;
import java.util.List;

/** Checks a request against the served model and limits; each failure names the offending field. */
public final class RequestValidator {

    public static final int DEFAULT_MAX_TOKENS = 16;
    public static final int MAX_LOGPROBS = 20;
    /** As OpenAI's completions API allows. */
    public static final int MAX_STOP_SEQUENCES = 4;
    public static final int MAX_STOP_CHARS = 256;

    private RequestValidator() {
    }

    /** Token ids given by the client: used exactly, nothing prepended. */
    public static List<Long> checkTokenIds(List<Long> ids, int vocabSize) {
        if (ids.isEmpty()) {
            throw new InvalidRequestException("token_ids", "token_ids must not be empty");
        }
        for (int i = 0; i < ids.size(); i++) {
            Long id = ids.get(i);
            if (id == null || id < 0 || id >= vocabSize) {
                throw new InvalidRequestException("token_ids[" + i + "]",
                        "token id " + id + " is outside the vocabulary [0, " + vocabSize + ")");
            }
        }
        return ids;
    }

    /** Exactly one of prompt and token_ids. */
    public static void checkInputChoice(GenerationRequest r) {
        if (r.prompt() != null && r.tokenIds() != null) {
            throw new InvalidRequestException("prompt", "give either prompt or token_ids, not both");
        }
        if (r.prompt() == null && r.tokenIds() == null) {
            throw new InvalidRequestException("prompt", "one of prompt or token_ids is required");
        }
        if (r.prompt() != null && r.prompt().isBlank()) {
            throw new InvalidRequestException("prompt", "prompt must not be empty");
        }
    }

    public static int maxTokens(GenerationRequest r, int promptLength, int limit, int maxPositions) {
        int n = r.maxTokens() == null ? DEFAULT_MAX_TOKENS : r.maxTokens();
        if (n <= 0) {
            throw new InvalidRequestException("max_tokens", "max_tokens must be positive, got " + n);
        }
        if (n > limit) {
            throw new InvalidRequestException("max_tokens", "max_tokens " + n + " exceeds the limit of " + limit);
        }
        if (promptLength + n > maxPositions) {
            throw new InvalidRequestException("max_tokens", "prompt (" + promptLength + " tokens) plus max_tokens ("
                    + n + ") exceeds the model's " + maxPositions + " positions");
        }
        return n;
    }

    /**
     * A prompt of {@code promptLength} tokens given as {@code field} (prompt or token_ids) must fit the configured
     * limit and leave the model room for at least one generated token.
     */
    public static void checkPromptLength(String field, int promptLength, int limit, int maxPositions) {
        int fits = Math.min(limit, maxPositions - 1);
        if (promptLength > fits) {
            String why = fits == limit ? "the limit is " + limit
                    : "the model's " + maxPositions + " positions leave room for " + fits + " and one generated token";
            throw new InvalidRequestException(field, field + " has " + promptLength + " tokens, more than fit: " + why, true);
        }
    }

    /** A text prompt's length in characters, checked before tokenizing it. */
    public static void checkPromptChars(String prompt, int limit) {
        if (prompt.length() > limit) {
            throw new InvalidRequestException("prompt", "prompt has " + prompt.length()
                    + " characters, more than the limit of " + limit, true);
        }
    }

    public static SamplingParams sampling(GenerationRequest r) {
        double temperature = r.temperature() == null ? 0.0 : r.temperature();
        if (!(temperature >= 0 && temperature <= 100)) {
            throw new InvalidRequestException("temperature", "temperature must be in [0, 100], got " + r.temperature());
        }
        double topP = r.topP() == null ? 1.0 : r.topP();
        if (!(topP > 0 && topP <= 1)) {
            throw new InvalidRequestException("top_p", "top_p must be in (0, 1], got " + r.topP());
        }
        int topK = r.topK() == null ? 0 : r.topK();
        if (topK < 0) {
            throw new InvalidRequestException("top_k", "top_k must be a number of tokens, or 0 for all of them, got " + topK);
        }
        int logprobs = r.logprobs() == null ? 0 : r.logprobs();
        if (logprobs < 0 || logprobs > MAX_LOGPROBS) {
            throw new InvalidRequestException("logprobs", "logprobs must be in [0, " + MAX_LOGPROBS + "], got " + logprobs);
        }
        long seed = r.seed() == null ? 0L : r.seed();
        return new SamplingParams(temperature, topP, topK, seed, logprobs);
    }

    /** Stop strings: at most {@value #MAX_STOP_SEQUENCES}, each non-empty and at most {@value #MAX_STOP_CHARS} characters. */
    public static StopSequences stop(GenerationRequest r) {
        if (r.stop() == null) {
            return StopSequences.NONE;
        }
        if (r.stop().size() > MAX_STOP_SEQUENCES) {
            throw new InvalidRequestException("stop", "stop has " + r.stop().size() + " strings, more than the "
                    + MAX_STOP_SEQUENCES + " allowed");
        }
        for (int i = 0; i < r.stop().size(); i++) {
            String s = r.stop().get(i);
            if (s == null || s.isEmpty() || s.length() > MAX_STOP_CHARS) {
                throw new InvalidRequestException("stop[" + i + "]", "a stop string must have 1 to " + MAX_STOP_CHARS
                        + " characters, got " + (s == null ? "null" : s.length()));
            }
        }
        return new StopSequences(r.stop());
    }
}
