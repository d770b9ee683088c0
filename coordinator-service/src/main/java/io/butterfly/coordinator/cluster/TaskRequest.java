package io.butterfly.coordinator.cluster;

import io.butterfly.common.hash.Sha256;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Objects;

/**
 * What a task was asked, as the replica that admitted it read it (validated, the prompt tokenized): recorded with the
 * task's start, so that another replica can resume the task once its owner is gone, and can tell a repeat of the
 * request from another request.
 *
 * @param promptTokenIds the prompt; empty once the task has ended (its hash stays)
 * @param promptSha256   SHA-256 of the prompt's token ids (big-endian int64s), which identifies it after it is dropped
 * @param stop           stop strings (empty for none)
 * @param idempotencyKey the client's {@code Idempotency-Key} as recorded ({@link #scopedKey}: under its owner's key),
 *                       or null
 * @param ownerKey       the id of the API key that started the task (only that key, and admin keys, see it), or
 *                       null: started without a key (none were set), anyone's to see
 * @param responseFormat the answer's shape when constrained (the SHA-256 of its canonical form,
 *                       {@code ResponseFormat.recorded()}), or null: free text
 */
public record TaskRequest(List<Long> promptTokenIds, String promptSha256, int maxTokens, double temperature, double topP,
                          int topK, long seed, int logprobs, boolean ignoreEos, List<String> stop,
                          String idempotencyKey, String ownerKey, String responseFormat) {

    /** A request for free text. */
    public TaskRequest(List<Long> promptTokenIds, String promptSha256, int maxTokens, double temperature, double topP,
                       int topK, long seed, int logprobs, boolean ignoreEos, List<String> stop,
                       String idempotencyKey, String ownerKey) {
        this(promptTokenIds, promptSha256, maxTokens, temperature, topP, topK, seed, logprobs, ignoreEos, stop,
                idempotencyKey, ownerKey, null);
    }

    public TaskRequest {
        promptTokenIds = List.copyOf(promptTokenIds);
        Objects.requireNonNull(promptSha256, "promptSha256");
        stop = stop == null ? List.of() : List.copyOf(stop);
    }

    /** A request started without an API key. */
    public TaskRequest(List<Long> promptTokenIds, String promptSha256, int maxTokens, double temperature, double topP,
                       int topK, long seed, int logprobs, boolean ignoreEos, List<String> stop, String idempotencyKey) {
        this(promptTokenIds, promptSha256, maxTokens, temperature, topP, topK, seed, logprobs, ignoreEos, stop,
                idempotencyKey, null);
    }

    /** A request for {@code prompt} without an API key, its hash computed. */
    public static TaskRequest of(List<Long> prompt, int maxTokens, double temperature, double topP, int topK, long seed,
                                 int logprobs, boolean ignoreEos, List<String> stop, String idempotencyKey) {
        return of(prompt, maxTokens, temperature, topP, topK, seed, logprobs, ignoreEos, stop, idempotencyKey, null);
    }

    /** A request for {@code prompt} started with the key {@code ownerKey} (null: none), its hash computed. */
    public static TaskRequest of(List<Long> prompt, int maxTokens, double temperature, double topP, int topK, long seed,
                                 int logprobs, boolean ignoreEos, List<String> stop, String idempotencyKey,
                                 String ownerKey) {
        return new TaskRequest(prompt, promptSha256(prompt), maxTokens, temperature, topP, topK, seed, logprobs,
                ignoreEos, stop, idempotencyKey, ownerKey);
    }

    /** The same request with the answer's shape {@code format} (null: free text). */
    public TaskRequest withResponseFormat(String format) {
        return new TaskRequest(promptTokenIds, promptSha256, maxTokens, temperature, topP, topK, seed, logprobs,
                ignoreEos, stop, idempotencyKey, ownerKey, format);
    }

    /**
     * An {@code Idempotency-Key} as recorded: under the id of the API key that sent it, so that two clients' keys never
     * meet (one client's key names none of another's tasks).
     */
    public static String scopedKey(String ownerKey, String idempotencyKey) {
        return ownerKey == null || idempotencyKey == null ? idempotencyKey : ownerKey + "/" + idempotencyKey;
    }

    /** The {@code Idempotency-Key} as its client sent it, or null. */
    public String clientIdempotencyKey() {
        return ownerKey != null && idempotencyKey != null && idempotencyKey.startsWith(ownerKey + "/")
                ? idempotencyKey.substring(ownerKey.length() + 1) : idempotencyKey;
    }

    static String promptSha256(List<Long> prompt) {
        ByteBuffer bytes = ByteBuffer.allocate(Long.BYTES * prompt.size());
        prompt.forEach(bytes::putLong);
        return Sha256.hex(bytes.array());
    }

    /** The same request without its prompt's tokens: what an ended task keeps. */
    TaskRequest withoutPrompt() {
        return promptTokenIds.isEmpty() ? this : new TaskRequest(List.of(), promptSha256, maxTokens, temperature, topP,
                topK, seed, logprobs, ignoreEos, stop, idempotencyKey, ownerKey, responseFormat);
    }

    /**
     * Whether {@code other} asks the same generation: the same prompt and parameters, the seed and the keys aside (a
     * client that left the seed to the server, as OpenAI's API allows, gets a fresh one each time it sends the request;
     * the task's own seed goes on).
     */
    public boolean sameGeneration(TaskRequest other) {
        return promptSha256.equals(other.promptSha256) && maxTokens == other.maxTokens
                && Double.compare(temperature, other.temperature) == 0 && Double.compare(topP, other.topP) == 0
                && topK == other.topK && logprobs == other.logprobs && ignoreEos == other.ignoreEos
                && stop.equals(other.stop) && Objects.equals(responseFormat, other.responseFormat);
    }
}
