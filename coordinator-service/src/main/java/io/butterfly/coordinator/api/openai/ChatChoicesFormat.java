package io.butterfly.coordinator.api.openai;

import io.butterfly.coordinator.api.rest.ChoicesFormat;
import io.butterfly.coordinator.inference.GeneratedToken;
import io.butterfly.coordinator.inference.GenerationResult;
import java.util.ArrayList;
import java.util.List;
import org.springframework.http.ProblemDetail;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter.SseEventBuilder;
import tools.jackson.databind.json.JsonMapper;

/**
 * A streamed chat answer of {@code n} choices, as OpenAI streams them: every chunk has the stream's one id and a single
 * choice with its {@code index} (its role first, then its text or tool calls, then its finish reason, each choice as
 * {@link ChatStreamFormat} streams one); once all have ended, the usage (if asked: the prompt once, every choice's
 * tokens), then {@code [DONE]}.
 */
final class ChatChoicesFormat implements ChoicesFormat {

    private final JsonMapper json;
    private final ChatJson.Header header;
    private final boolean includeUsage;
    private final List<ChatStreamFormat> choices;

    /** {@code choices}: each choice's own format ({@link ChatStreamFormat}'s per-choice constructor). */
    ChatChoicesFormat(JsonMapper json, ChatJson.Header header, boolean includeUsage, List<ChatStreamFormat> choices) {
        this.json = json;
        this.header = header;
        this.includeUsage = includeUsage;
        this.choices = List.copyOf(choices);
    }

    @Override
    public List<SseEventBuilder> token(int choice, GeneratedToken token) {
        return choices.get(choice).token(token);
    }

    @Override
    public List<SseEventBuilder> finished(int choice, GenerationResult result) {
        return choices.get(choice).finish(result);
    }

    @Override
    public List<SseEventBuilder> end(List<GenerationResult> results) {
        List<SseEventBuilder> events = new ArrayList<>(2);
        if (includeUsage) {
            events.add(SseEmitter.event().data(" " + json.writeValueAsString(ChatJson.usageChunk(header, results))));
        }
        events.add(SseEmitter.event().data(" [DONE]"));
        return events;
    }

    @Override
    public List<SseEventBuilder> error(ProblemDetail problem) {
        return choices.get(0).error(problem);
    }
}
