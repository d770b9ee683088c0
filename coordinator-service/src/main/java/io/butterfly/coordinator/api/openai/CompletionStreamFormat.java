package io.butterfly.coordinator.api.openai;

import io.butterfly.coordinator.api.rest.StreamFormat;
import io.butterfly.coordinator.inference.GeneratedToken;
import io.butterfly.coordinator.inference.GenerationResult;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter.SseEventBuilder;

/**
 * A streamed completion as OpenAI's clients read it: unnamed {@code data:} events, a {@code text_completion} chunk per
 * token, a last chunk with the finish reason (and one with the usage if asked), then {@code data: [DONE]}. A failure
 * after the first token is an {@code error} object (vLLM's convention), then {@code [DONE]}.
 */
final class CompletionStreamFormat implements StreamFormat {

    private final long created;
    private final String model;
    private final CompletionLogprobs logprobs;
    private final boolean includeUsage;

    /** {@code logprobs} null unless the request asked for them. */
    CompletionStreamFormat(long created, String model, CompletionLogprobs logprobs, boolean includeUsage) {
        this.created = created;
        this.model = model;
        this.logprobs = logprobs;
        this.includeUsage = includeUsage;
    }

    @Override
    public List<SseEventBuilder> token(GeneratedToken t) {
        Map<String, Object> lp = logprobs == null ? null
                : logprobs.next(List.of(t.tokenId()), List.of(t.logprob()), List.of(t.topLogprobs()));
        return List.of(data(CompletionJson.chunk(header(t.taskId()), t.text(), lp, null)));
    }

    @Override
    public List<SseEventBuilder> done(GenerationResult r) {
        CompletionJson.Header h = header(r.taskId());
        List<SseEventBuilder> events = new ArrayList<>();
        events.add(data(CompletionJson.chunk(h, "", null, r.finishReason())));
        if (includeUsage) {
            events.add(data(CompletionJson.usageChunk(h, r)));
        }
        events.add(SseEmitter.event().data("[DONE]"));
        return events;
    }

    @Override
    public List<SseEventBuilder> error(ProblemDetail problem) {
        return List.of(data(OpenAiErrors.body(problem)), SseEmitter.event().data("[DONE]"));
    }

    private CompletionJson.Header header(String taskId) {
        return CompletionJson.Header.of(taskId, created, model);
    }

    private static SseEventBuilder data(Map<String, Object> json) {
        return SseEmitter.event().data(json, MediaType.APPLICATION_JSON);
    }
}
