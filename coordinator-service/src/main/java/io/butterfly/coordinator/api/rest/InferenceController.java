package io.butterfly.coordinator.api.rest;

import com.fasterxml.jackson.annotation.JsonFormat;
import com.fasterxml.jackson.annotation.JsonProperty;
import io.butterfly.common.api.Generation;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.ResponseFormat;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.api.security.Requesters;
import io.butterfly.coordinator.inference.RequestHandle;
import io.butterfly.coordinator.inference.Requester;
import io.butterfly.coordinator.inference.sampling.TokenLogprob;
import java.util.LinkedHashMap;
import java.util.List;
import tools.jackson.databind.JsonNode;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

/**
 * {@code POST /api/v1/inference}: one generation, answered when it completes (at most once per
 * {@code Idempotency-Key}); {@code POST /api/v1/inference/stream}: the same request, answered token by token as
 * server-sent events, or with {@code Last-Event-ID} the rest of a stream a client lost (see {@link InferenceStreams}).
 */
@RestController
@RequestMapping("/api/v1/inference")
public class InferenceController {

    static final String IDEMPOTENCY_KEY = "Idempotency-Key";

    private final InferenceService inference;
    private final InferenceStreams streams;

    public InferenceController(InferenceService inference, InferenceStreams streams) {
        this.inference = inference;
        this.streams = streams;
    }

    /** The JSON body; snake_case as in the API. */
    public record Body(String prompt,
                       @JsonProperty("token_ids") List<Long> tokenIds,
                       @JsonProperty("max_tokens") Integer maxTokens,
                       Double temperature,
                       @JsonProperty("top_p") Double topP,
                       @JsonProperty("top_k") Integer topK,
                       Long seed,
                       Integer logprobs,
                       @JsonProperty("ignore_eos") Boolean ignoreEos,
                       // one string or a list, as OpenAI's API takes it
                       @JsonFormat(with = JsonFormat.Feature.ACCEPT_SINGLE_VALUE_AS_ARRAY) List<String> stop,
                       // OpenAI's response_format: text, json_object, json_schema (constrained decoding)
                       @JsonProperty("response_format") JsonNode responseFormat,
                       // per-layer snapshot hashes of every step in the task's transcript (debugging; admin only)
                       @JsonProperty("layer_hashes") Boolean layerHashes) {

        GenerationRequest request() {
            return new GenerationRequest(prompt, tokenIds, maxTokens, temperature, topP, topK, seed, logprobs, ignoreEos,
                    stop, ResponseFormat.parse(responseFormat, "response_format"));
        }

        boolean withLogprobs() {
            return logprobs != null && logprobs > 0;
        }
    }

    /**
     * Answered when the generation completes; no thread waits for it meanwhile. With an {@code Idempotency-Key}, a
     * repeat of the request (at any replica) answers the same generation instead of running another.
     */
    @PostMapping(consumes = MediaType.APPLICATION_JSON_VALUE, produces = MediaType.APPLICATION_JSON_VALUE)
    public CompletableFuture<Generation> infer(@RequestBody Body body,
            @RequestHeader(name = IDEMPOTENCY_KEY, required = false) String idempotencyKey) {
        Requester requester = Requesters.current();
        if (Boolean.TRUE.equals(body.layerHashes())) {
            return inference.submit(layerHashes(body, idempotencyKey, requester)).result()
                    .thenApply(r -> toJson(r, body.withLogprobs()));
        }
        RequestHandle handle = idempotencyKey == null ? inference.submit(body.request(), null, requester)
                : inference.submitOnce(body.request(), idempotencyKey, null, requester);
        return handle.result().thenApply(r -> toJson(r, body.withLogprobs()));
    }

    /**
     * A request asking per-layer snapshot hashes (docs/verified-execution.md): with API keys set, an admin key's only
     * (403 otherwise: the hashes tell about the stages' computation, and each costs a step run layer by layer); without
     * an {@code Idempotency-Key} (a repeat answers the first run, which may not have had them).
     */
    private InferenceService.Prepared layerHashes(Body body, String idempotencyKey, Requester requester) {
        if (requester.keyId() != null && !requester.admin()) {
            throw new org.springframework.web.server.ResponseStatusException(org.springframework.http.HttpStatus.FORBIDDEN,
                    "layer_hashes (per-layer snapshot hashes) needs an admin API key");
        }
        if (idempotencyKey != null) {
            throw new io.butterfly.coordinator.inference.InvalidRequestException("layer_hashes",
                    "layer_hashes is not taken with an " + IDEMPOTENCY_KEY + " header (a repeat answers the first run)");
        }
        return inference.prepare(body.request(), null, requester).withLayerHashes();
    }

    /** Refusals (bad input, not READY, a full queue) are problem responses as above, before any event. */
    @PostMapping(path = "/stream", consumes = MediaType.APPLICATION_JSON_VALUE)
    public CompletableFuture<SseEmitter> stream(@RequestBody Body body,
            @RequestHeader(name = StreamEventId.HEADER, required = false) String lastEventId) {
        if (Boolean.TRUE.equals(body.layerHashes())) {
            throw new io.butterfly.coordinator.inference.InvalidRequestException("layer_hashes",
                    "layer_hashes is taken by POST /api/v1/inference only, not by the stream");
        }
        return streams.start(body.request(), lastEventId, task -> new NativeStreamFormat(body.withLogprobs()));
    }

    static Generation toJson(GenerationResult r, boolean withLogprobs) {
        return new Generation(r.taskId(), r.modelId(), r.promptTokenIds(), r.tokenIds(), r.text(), r.finishReason(),
                r.tokenLogprobs(), withLogprobs ? r.topLogprobs().stream().map(InferenceController::step).toList() : null,
                new Generation.Usage(r.promptTokenIds().size(), r.tokenIds().size(),
                        r.promptTokenIds().size() + r.tokenIds().size()),
                new Generation.Timings(round(r.timeToFirstTokenMs()), round(r.decodeTokensPerSecond()),
                        round(r.totalMs()), roundEach(r.stageComputeMs()), round(r.transportMs()),
                        round(r.pipelineMs()), round(r.samplingMs())));
    }

    static List<Generation.TopLogprob> step(List<TokenLogprob> top) {
        return top.stream().map(t -> new Generation.TopLogprob(t.tokenId(), t.logprob())).toList();
    }

    private static Map<String, Double> roundEach(Map<String, Double> ms) {
        Map<String, Double> out = new LinkedHashMap<>();
        ms.forEach((k, v) -> out.put(k, round(v)));
        return out;
    }

    private static double round(double v) {
        return Math.round(v * 1000.0) / 1000.0;
    }
}
