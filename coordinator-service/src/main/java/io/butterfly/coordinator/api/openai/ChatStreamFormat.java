package io.butterfly.coordinator.api.openai;

import io.butterfly.common.api.OpenAiChatChunk;
import io.butterfly.common.api.OpenAiChatCompletion;
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
 * A streamed chat answer as OpenAI's clients read it: unnamed events, a first chunk with the role, a chunk with each
 * token's text, a chunk with the finish reason (and one with the usage if asked: the other chunks then say
 * {@code "usage": null}, as OpenAI's do), then {@code [DONE]}. A failure after the first token is an {@code error}
 * object, then {@code [DONE]}, as for completions ({@link CompletionStreamFormat}).
 */
final class ChatStreamFormat implements StreamFormat {

    private final JsonMapper json;
    private final long created;
    private final String model;
    private final ChatLogprobs logprobs;
    private final boolean includeUsage;
    private boolean roleSent;

    /** {@code logprobs} null unless the request asked for them. */
    ChatStreamFormat(JsonMapper json, long created, String model, ChatLogprobs logprobs, boolean includeUsage) {
        this.json = json;
        this.created = created;
        this.model = model;
        this.logprobs = logprobs;
        this.includeUsage = includeUsage;
    }

    @Override
    public List<SseEventBuilder> token(GeneratedToken t) {
        ChatJson.Header h = ChatJson.Header.of(t.taskId(), created, model);
        List<SseEventBuilder> events = new ArrayList<>(2);
        if (!roleSent) { // the events are made one stream at a time, in order (SerialDelivery)
            events.add(data(ChatJson.roleChunk(h)));
            roleSent = true;
        }
        OpenAiChatCompletion.Logprobs lp = logprobs == null ? null
                : logprobs.next(List.of(t.tokenId()), List.of(t.logprob()), List.of(t.topLogprobs()));
        events.add(data(ChatJson.contentChunk(h, t.text(), lp)));
        return events;
    }

    @Override
    public List<SseEventBuilder> done(GenerationResult r) {
        ChatJson.Header h = ChatJson.Header.of(r.taskId(), created, model);
        List<SseEventBuilder> events = new ArrayList<>(3);
        events.add(data(ChatJson.finishChunk(h, r.finishReason())));
        if (includeUsage) {
            events.add(SseEmitter.event().data(" " + json.writeValueAsString(ChatJson.usageChunk(h, r))));
        }
        events.add(SseEmitter.event().data(" [DONE]"));
        return events;
    }

    @Override
    public List<SseEventBuilder> error(ProblemDetail problem) {
        return List.of(SseEmitter.event().data(" " + json.writeValueAsString(OpenAiErrors.body(problem))),
                SseEmitter.event().data(" [DONE]"));
    }

    /** A chunk; with usage asked for, one that says it has none (only the last chunk does). */
    private SseEventBuilder data(OpenAiChatChunk chunk) {
        return SseEmitter.event().data(" " + json.writeValueAsString(includeUsage ? ChatJson.withoutUsage(chunk) : chunk));
    }
}
