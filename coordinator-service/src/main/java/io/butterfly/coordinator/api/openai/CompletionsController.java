package io.butterfly.coordinator.api.openai;

import io.butterfly.coordinator.api.rest.InferenceStreams;
import io.butterfly.coordinator.api.rest.StreamEventId;
import io.butterfly.coordinator.api.security.Requesters;
import io.butterfly.common.api.OpenAiModels;
import io.butterfly.common.api.OpenAiUsage;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.inference.sampling.BestOf;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.NotServingException;
import io.butterfly.coordinator.inference.RequestHandle;
import io.butterfly.coordinator.inference.Requester;
import io.butterfly.coordinator.inference.UnknownModelException;
import io.butterfly.coordinator.model.ServedModel;
import java.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.json.JsonMapper;

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
    private final JsonMapper json;

    public CompletionsController(InferenceService inference, InferenceStreams streams, Clock clock, JsonMapper json) {
        this.inference = inference;
        this.streams = streams;
        this.clock = clock;
        this.json = json;
    }

    /**
     * A completion as JSON, a choice per prompt; or with {@code "stream": true} (one prompt) as server-sent events.
     * Every prompt is admitted before any runs, so a refusal (bad input, too many tasks) comes before any work.
     */
    @PostMapping(path = "/completions", consumes = MediaType.APPLICATION_JSON_VALUE)
    public CompletableFuture<?> complete(@RequestBody CompletionRequest body,
            @RequestHeader(name = StreamEventId.HEADER, required = false) String lastEventId) {
        List<CompletionRequest.Prompt> prompts = body.prompts();
        long seed = ThreadLocalRandom.current().nextLong();
        long created = clock.millis() / 1000;
        String model = requireServed(body.model(), inference.servedModel());
        if (body.streaming() && body.choices() > 1) {
            return streamChoices(body, prompts.get(0), seed, created, model, lastEventId);
        }
        if (body.streaming()) {
            CompletionRequest.Prompt prompt = prompts.get(0);
            return namingTokenIdsAs(prompt.field(), () -> streams.start(body.generation(prompt, seed), lastEventId,
                    task -> new CompletionStreamFormat(json, created, model, logprobs(body, task), body.includeUsage())));
        }
        // Every prompt is validated before any is queued (a bad one runs none); they run together, in one batch.
        List<InferenceService.Prepared> prepared = new ArrayList<>(prompts.size());
        Requester requester = Requesters.current();
        int candidates = body.candidates();
        for (CompletionRequest.Prompt prompt : prompts) {
            for (int i = 0; i < candidates; i++) { // best_of (n unless given) of each prompt, each its own seed
                int index = i;
                prepared.add(namingTokenIdsAs(prompt.field(), () -> inference.prepare(body.generation(prompt, seed,
                        index), null, requester)));
            }
        }
        List<RequestHandle> tasks = inference.submitAll(prepared);
        return CompletableFuture.allOf(tasks.stream().map(RequestHandle::result).toArray(CompletableFuture[]::new))
                .thenApply(all -> {
                    List<CompletionJson.Choice> choices = new ArrayList<>(prompts.size() * body.choices());
                    int promptTokens = 0;
                    int completionTokens = 0;
                    for (int p = 0; p < prompts.size(); p++) {
                        List<RequestHandle> ofPrompt = tasks.subList(p * candidates, (p + 1) * candidates);
                        List<GenerationResult> results = ofPrompt.stream().map(t -> t.result().join()).toList();
                        // every candidate's tokens count, as OpenAI bills best_of; the n best are returned
                        promptTokens += results.get(0).promptTokenIds().size();
                        completionTokens += results.stream().mapToInt(r -> r.tokenIds().size()).sum();
                        List<Integer> best = candidates == body.choices()
                                ? java.util.stream.IntStream.range(0, candidates).boxed().toList()
                                : BestOf.best(results.stream().map(GenerationResult::tokenLogprobs).toList(),
                                        body.choices());
                        for (int k : best) {
                            choices.add(new CompletionJson.Choice(choices.size(), results.get(k),
                                    logprobs(body, ofPrompt.get(k))));
                        }
                    }
                    GenerationResult first = tasks.get(0).result().join();
                    return CompletionJson.completion(CompletionJson.Header.of(first.taskId(), created, model), choices,
                            OpenAiUsage.of(promptTokens, completionTokens));
                });
    }

    /**
     * {@code n} > 1 choices of one prompt as one stream, interleaved as their tokens come, each chunk naming its
     * choice's index (as OpenAI streams them). Not resumed with {@code Last-Event-ID}: its events carry no id.
     */
    private CompletableFuture<?> streamChoices(CompletionRequest body, CompletionRequest.Prompt prompt, long seed,
                                               long created, String model, String lastEventId) {
        if (lastEventId != null) {
            throw new InvalidRequestException(StreamEventId.HEADER, "a stream of n > 1 choices is not resumed with "
                    + StreamEventId.HEADER + ": send the request again (with its seed, the same choices come)");
        }
        List<GenerationRequest> requests = new ArrayList<>(body.choices());
        for (int i = 0; i < body.choices(); i++) {
            requests.add(body.generation(prompt, seed, i));
        }
        return namingTokenIdsAs(prompt.field(), () -> streams.startChoices(requests, tasks -> {
            List<CompletionStreamFormat> choices = new ArrayList<>(tasks.size());
            for (int i = 0; i < tasks.size(); i++) {
                choices.add(new CompletionStreamFormat(json, created, model, logprobs(body, tasks.get(i)), false, i,
                        tasks.get(0).taskId()));
            }
            return new CompletionChoicesFormat(json, created, model, body.includeUsage(), tasks.get(0).taskId(), choices);
        }));
    }

    /** The served model (none while the cluster is not READY). */
    @GetMapping(path = "/models", produces = MediaType.APPLICATION_JSON_VALUE)
    public OpenAiModels models() {
        try {
            return OpenAiModels.of(List.of(describe(inference.servedModel())));
        } catch (NotServingException notYet) {
            return OpenAiModels.of(List.of());
        }
    }

    @GetMapping(path = "/models/{id}", produces = MediaType.APPLICATION_JSON_VALUE)
    public OpenAiModels.Model model(@PathVariable String id) {
        ServedModel served = inference.servedModel();
        requireServed(id, served);
        return describe(served);
    }

    private static OpenAiModels.Model describe(ServedModel served) {
        return new OpenAiModels.Model(served.manifest().modelId(), "model", served.manifest().createdAtMs() / 1000,
                "butterfly", served.config().maxPositions(), served.manifest().merkleRoot());
    }

    /** The served model's id, if {@code requested} (optional, as in vLLM) names it. */
    static String requireServed(String requested, ServedModel served) {
        String id = served.manifest().modelId();
        if (requested != null && !requested.equals(id)) {
            throw new UnknownModelException("model", requested, id);
        }
        return id;
    }

    private static CompletionLogprobs logprobs(CompletionRequest body, RequestHandle task) {
        return body.withLogprobs()
                ? new CompletionLogprobs(task.model().tokenizer()::decode, task.promptTokenIds())
                : null;
    }

    /** Token ids arrive in {@code prompt} here, so errors the inference names {@code token_ids} are renamed. */
    private static <T> T namingTokenIdsAs(String promptField, Supplier<T> call) {
        return RenamedFields.renamed(field -> field.startsWith("token_ids")
                ? promptField + field.substring("token_ids".length())
                : field.equals("prompt") ? promptField : field, call);
    }
}
