package io.butterfly.coordinator.api.openai;

import io.butterfly.coordinator.api.rest.InferenceStreams;
import io.butterfly.coordinator.inference.AdmittedTask;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.inference.NotServingException;
import io.butterfly.coordinator.inference.ServedModel;
import io.butterfly.coordinator.inference.UnknownModelException;
import java.time.Clock;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * OpenAI's completions API over the same inference as {@code /api/v1/inference}, so OpenAI's client libraries and
 * tools built on them work against a Butterfly cluster: {@code POST /v1/completions} (answered whole, or streamed
 * with {@code "stream": true}), {@code GET /v1/models} and {@code GET /v1/models/{id}}. Errors are problem documents
 * that also carry OpenAI's {@code error} object (see {@link OpenAiErrors}).
 */
@RestController
@RequestMapping("/v1")
public class CompletionsController {

    private final InferenceService inference;
    private final InferenceStreams streams;
    private final Clock clock;

    public CompletionsController(InferenceService inference, InferenceStreams streams, Clock clock) {
        this.inference = inference;
        this.streams = streams;
        this.clock = clock;
    }

    /** A completion as JSON, or with {@code "stream": true} as server-sent events (an emitter). */
    @PostMapping(path = "/completions", consumes = MediaType.APPLICATION_JSON_VALUE)
    public Object complete(@RequestBody CompletionRequest body) {
        GenerationRequest request = body.generation(ThreadLocalRandom.current().nextLong());
        String model = check(body.model(), inference.servedModel());
        long created = clock.millis() / 1000;
        if (body.streaming()) {
            return withPromptFields(body, () -> streams.start(request, task -> new CompletionStreamFormat(created,
                    model, logprobs(body, task), body.includeUsage())));
        }
        AdmittedTask task = withPromptFields(body, () -> inference.admit(request));
        GenerationResult result = inference.run(task, null);
        return CompletionJson.completion(CompletionJson.Header.of(result.taskId(), created, model), result,
                logprobs(body, task));
    }

    /** The served model (none while the cluster is not READY). */
    @GetMapping(path = "/models", produces = MediaType.APPLICATION_JSON_VALUE)
    public Map<String, Object> models() {
        List<Map<String, Object>> data;
        try {
            data = List.of(model(inference.servedModel()));
        } catch (NotServingException notYet) {
            data = List.of();
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("object", "list");
        m.put("data", data);
        return m;
    }

    @GetMapping(path = "/models/{id}", produces = MediaType.APPLICATION_JSON_VALUE)
    public Map<String, Object> model(@PathVariable String id) {
        ServedModel served = inference.servedModel();
        check(id, served);
        return model(served);
    }

    private static Map<String, Object> model(ServedModel served) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", served.manifest().getModelId());
        m.put("object", "model");
        m.put("created", served.manifest().getCreatedAtMs() / 1000);
        m.put("owned_by", "butterfly");
        m.put("max_model_len", served.config().maxPositions());
        m.put("merkle_root", served.manifest().getMerkleRoot());
        return m;
    }

    /** The served model's id, if {@code requested} (optional, as in vLLM) names it. */
    private static String check(String requested, ServedModel served) {
        String id = served.manifest().getModelId();
        if (requested != null && !requested.equals(id)) {
            throw new UnknownModelException("model", requested, id);
        }
        return id;
    }

    private static CompletionLogprobs logprobs(CompletionRequest body, AdmittedTask task) {
        return body.withLogprobs() ? new CompletionLogprobs(id -> task.model().tokenizer().decode(new long[]{id}, false))
                : null;
    }

    /** Token ids arrive in {@code prompt} here, so errors the inference names {@code token_ids} are renamed. */
    private static <T> T withPromptFields(CompletionRequest body, Supplier<T> call) {
        try {
            return call.get();
        } catch (InvalidRequestException e) {
            if (!e.field().startsWith("token_ids")) {
                throw e;
            }
            String field = body.tokenIdsField() + e.field().substring("token_ids".length());
            throw new InvalidRequestException(field, e.getMessage().replace("token_ids", field), e.tooLarge());
        }
    }
}
