package io.butterfly.coordinator.api.openai;

import io.butterfly.common.api.OpenAiCompletion;
import io.butterfly.coordinator.api.rest.StreamEventId;
import io.butterfly.coordinator.api.rest.StreamFormat;
import io.butterfly.coordinator.inference.GeneratedToken;
import io.butterfly.coordinator.inference.GenerationResult;
import java.util.ArrayList;
import java.util.List;
import org.springframework.http.ProblemDetail;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter.SseEventBuilder;
import tools.jackson.databind.json.JsonMapper;

/**
 * A streamed completion as OpenAI's clients read it: unnamed events, a {@code text_completion} chunk per token, a
 * last chunk with the finish reason (and one with the usage if asked), then {@code [DONE]}. A failure after the first
 * token is an {@code error} object (vLLM's convention), then {@code [DONE]}. Each line reads {@code data: } with a
 * space, as OpenAI writes it: many hand-written clients strip exactly that prefix. A token's chunk carries an SSE id
 * ({@link StreamEventId}), so an SSE client can resume the stream with {@code Last-Event-ID}.
 */
final class CompletionStreamFormat implements StreamFormat {

    private final JsonMapper json;
    private final long created;
    private final String model;
    private final CompletionLogprobs logprobs;
    private final boolean includeUsage;
    /** The choice's index; the task the stream's id names (null: each event's own); whether events carry SSE ids. */
    private final int index;
    private final String streamTaskId;

    /** {@code logprobs} null unless the request asked for them. */
    CompletionStreamFormat(JsonMapper json, long created, String model, CompletionLogprobs logprobs,
                           boolean includeUsage) {
        this(json, created, model, logprobs, includeUsage, 0, null);
    }

    /**
     * Choice {@code index} of a stream of several ({@link CompletionChoicesFormat}): its chunks carry its index and the
     * id of the stream ({@code cmpl-} + {@code streamTaskId}, the first choice's task), and no SSE id (such a stream is
     * not resumed with {@code Last-Event-ID}).
     */
    CompletionStreamFormat(JsonMapper json, long created, String model, CompletionLogprobs logprobs,
                           boolean includeUsage, int index, String streamTaskId) {
        this.json = json;
        this.created = created;
        this.model = model;
        this.logprobs = logprobs;
        this.includeUsage = includeUsage;
        this.index = index;
        this.streamTaskId = streamTaskId;
    }

    @Override
    public List<SseEventBuilder> token(GeneratedToken t) {
        OpenAiCompletion.Logprobs lp = logprobs == null ? null
                : logprobs.next(List.of(t.tokenId()), List.of(t.logprob()), List.of(t.topLogprobs()));
        SseEventBuilder event = data(CompletionJson.chunk(header(t.taskId()), index, t.text(), lp, null));
        return List.of(streamTaskId == null ? event.id(StreamEventId.of(t)) : event);
    }

    /** The chunk that ends this choice: its finish reason. */
    SseEventBuilder finish(GenerationResult r) {
        return data(CompletionJson.chunk(header(r.taskId()), index, "", null, r.finishReason()));
    }

    @Override
    public List<SseEventBuilder> done(GenerationResult r) {
        CompletionJson.Header h = header(r.taskId());
        List<SseEventBuilder> events = new ArrayList<>();
        events.add(finish(r));
        if (includeUsage) {
            events.add(data(CompletionJson.usageChunk(h, r)));
        }
        events.add(done());
        return events;
    }

    @Override
    public List<SseEventBuilder> error(ProblemDetail problem) {
        return List.of(data(OpenAiErrors.body(problem)), done());
    }

    private CompletionJson.Header header(String taskId) {
        return CompletionJson.Header.of(streamTaskId == null ? taskId : streamTaskId, created, model);
    }

    private SseEventBuilder data(Object object) {
        return SseEmitter.event().data(" " + json.writeValueAsString(object));
    }

    static SseEventBuilder done() {
        return SseEmitter.event().data(" [DONE]");
    }
}
