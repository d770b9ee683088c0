package io.butterfly.coordinator.api.openai;

import io.butterfly.common.api.OpenAiChatCompletion;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.Requester;
import io.butterfly.coordinator.inference.sampling.ChoiceSeeds;
import java.util.ArrayList;
import io.butterfly.coordinator.api.rest.InferenceStreams;
import io.butterfly.coordinator.api.rest.StreamEventId;
import io.butterfly.coordinator.api.security.Requesters;
import io.butterfly.coordinator.chat.ChatPrompt;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.RequestHandle;
import io.butterfly.coordinator.model.ChatTemplate;
import io.butterfly.coordinator.model.ServedModel;
import io.butterfly.coordinator.tools.ToolCallFormat;
import io.butterfly.coordinator.tools.ToolReply;
import io.butterfly.coordinator.tools.Tools;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;
import org.springframework.http.MediaType;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.json.JsonMapper;

/**
 * OpenAI's chat completions API, {@code POST /v1/chat/completions}: the conversation is made into a prompt by the
 * served model's own chat template ({@link ChatPrompt}), then generated like any completion (the same inference,
 * engine and streams), and answered as a {@code chat.completion} object or, with {@code "stream": true}, as
 * {@code chat.completion.chunk} events. With {@code tools} the template shows the model the functions, and its reply
 * is read for calls in the format the template taught it ({@link ToolCallFormat}), or constrained to calls
 * ({@code tool_choice} required or a function: {@link Tools#constraint}). Errors are problem documents with OpenAI's {@code error} object
 * ({@link OpenAiErrors}).
 */
@RestController
@RequestMapping("/v1")
public class ChatCompletionsController {

    private final InferenceService inference;
    private final InferenceStreams streams;
    private final Clock clock;
    private final JsonMapper json;
    private final int maxNewTokens;
    private final int maxPromptChars;
    private final int maxChatMessages;

    public ChatCompletionsController(InferenceService inference, InferenceStreams streams, Clock clock, JsonMapper json,
                                     CoordinatorProperties props) {
        this.inference = inference;
        this.streams = streams;
        this.clock = clock;
        this.json = json;
        this.maxNewTokens = props.maxNewTokens();
        this.maxPromptChars = props.maxPromptChars();
        this.maxChatMessages = props.maxChatMessages();
    }

    /**
     * The assistant's reply to {@code messages}, whole or streamed; every refusal comes before any work. A stream that
     * broke is picked up after its last event with {@code Last-Event-ID}, as on /v1/completions.
     */
    @PostMapping(path = "/chat/completions", consumes = MediaType.APPLICATION_JSON_VALUE)
    public CompletableFuture<?> chat(@RequestBody ChatCompletionRequest body,
            @RequestHeader(name = StreamEventId.HEADER, required = false) String lastEventId) {
        List<ChatTemplate.Message> conversation = body.conversation(maxChatMessages);
        long seed = ThreadLocalRandom.current().nextLong();
        long created = clock.millis() / 1000;
        ServedModel served = inference.servedModel();
        String model = CompletionsController.requireServed(body.model(), served);
        Tools tools = body.readTools();
        long[] prompt = ChatPrompt.tokens(served, conversation, tools.forTemplate(), maxPromptChars);
        ToolCallFormat format = served.chatTemplate() == null ? null : ToolCallFormat.of(served.chatTemplate().source());
        GenerationRequest request = body.generation(prompt,
                ChatPrompt.defaultMaxTokens(prompt.length, maxNewTokens, served.config().maxPositions()), seed, tools);
        if (body.streaming() && body.choices() > 1) {
            return streamChoices(body, request, created, model, tools, format, lastEventId);
        }
        if (body.streaming()) {
            return namingChatFields(body, () -> streams.start(request, lastEventId,
                    task -> new ChatStreamFormat(json, created, model, logprobs(body, task), body.includeUsage(),
                            tools, format)));
        }
        // n choices, each with a seed of its own derived from the request's, all admitted before any runs
        List<InferenceService.Prepared> prepared = new ArrayList<>(body.choices());
        Requester requester = Requesters.current();
        for (int i = 0; i < body.choices(); i++) {
            GenerationRequest choice = ChatCompletionRequest.withSeed(request, ChoiceSeeds.of(request.seed(), i));
            prepared.add(namingChatFields(body, () -> inference.prepare(choice, null, requester)));
        }
        List<RequestHandle> tasks = inference.submitAll(prepared);
        return CompletableFuture.allOf(tasks.stream().map(RequestHandle::result).toArray(CompletableFuture[]::new))
                .thenApply(all -> {
                    List<GenerationResult> results = new ArrayList<>(tasks.size());
                    List<OpenAiChatCompletion.Logprobs> logprobs = new ArrayList<>(tasks.size());
                    for (RequestHandle task : tasks) {
                        GenerationResult r = task.result().join();
                        ChatLogprobs lp = logprobs(body, task);
                        results.add(r);
                        logprobs.add(lp == null ? null : lp.next(r.tokenIds(), r.tokenLogprobs(), r.topLogprobs()));
                    }
                    return ChatJson.completion(ChatJson.Header.of(results.get(0).taskId(), created, model), results,
                            logprobs, r -> ToolReply.of(tools, format, r.taskId(), r.text(), r.finishReason()));
                });
    }

    /**
     * {@code n} > 1 choices as one stream, interleaved as their tokens come, each chunk naming its choice's index (as
     * OpenAI streams them), each choice with its seed derived from the request's. Not resumed with
     * {@code Last-Event-ID}: its events carry no id.
     */
    private CompletableFuture<?> streamChoices(ChatCompletionRequest body, GenerationRequest request, long created,
                                               String model, Tools tools, ToolCallFormat format, String lastEventId) {
        if (lastEventId != null) {
            throw new io.butterfly.coordinator.inference.InvalidRequestException(StreamEventId.HEADER, "a stream of n > 1"
                    + " choices is not resumed with " + StreamEventId.HEADER + ": send the request again (with its "
                    + "seed, the same choices come)");
        }
        List<GenerationRequest> requests = new ArrayList<>(body.choices());
        for (int i = 0; i < body.choices(); i++) {
            requests.add(ChatCompletionRequest.withSeed(request, ChoiceSeeds.of(request.seed(), i)));
        }
        return namingChatFields(body, () -> streams.startChoices(requests, tasks -> {
            String streamTaskId = tasks.get(0).taskId();
            List<ChatStreamFormat> choices = new ArrayList<>(tasks.size());
            for (int i = 0; i < tasks.size(); i++) {
                choices.add(new ChatStreamFormat(json, created, model, logprobs(body, tasks.get(i)),
                        body.includeUsage(), tools, format, i, streamTaskId));
            }
            return new ChatChoicesFormat(json, ChatJson.Header.of(streamTaskId, created, model), body.includeUsage(),
                    choices);
        }));
    }

    private static ChatLogprobs logprobs(ChatCompletionRequest body, RequestHandle task) {
        return body.withLogprobs() ? new ChatLogprobs(task.model().tokenizer()::decode, task.promptTokenIds()) : null;
    }

    /**
     * The prompt reaches the inference as token ids and the reply's length as max_tokens: refusals of them name what
     * the client sent ({@code messages}, and {@code max_completion_tokens} unless it said {@code max_tokens}).
     */
    private static <T> T namingChatFields(ChatCompletionRequest body, Supplier<T> call) {
        String maxTokens = body.maxTokensField() != null ? body.maxTokensField() : "max_completion_tokens";
        return RenamedFields.renamed(field -> field.startsWith("token_ids") ? "messages"
                : field.equals("max_tokens") ? maxTokens : field.equals("logprobs") ? "top_logprobs" : field, call);
    }
}
