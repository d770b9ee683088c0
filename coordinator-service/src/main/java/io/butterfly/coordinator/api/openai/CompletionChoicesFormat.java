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
 * A streamed completion of {@code n} choices, as OpenAI streams them: every chunk has the stream's one id and a
 * single choice with its {@code index}; each choice ends with its own finish chunk; once all have, the usage (if
 * asked: the prompt once, every choice's tokens), then {@code [DONE]}.
 */
final class CompletionChoicesFormat implements ChoicesFormat {

    private final JsonMapper json;
    private final long created;
    private final String model;
    private final boolean includeUsage;
    private final String streamTaskId;
    private final List<CompletionStreamFormat> choices;

    /** {@code choices}: each choice's own format ({@link CompletionStreamFormat}'s per-choice constructor). */
    CompletionChoicesFormat(JsonMapper json, long created, String model, boolean includeUsage, String streamTaskId,
                            List<CompletionStreamFormat> choices) {
        this.json = json;
        this.created = created;
        this.model = model;
        this.includeUsage = includeUsage;
        this.streamTaskId = streamTaskId;
        this.choices = List.copyOf(choices);
    }

    @Override
    public List<SseEventBuilder> token(int choice, GeneratedToken token) {
        return choices.get(choice).token(token);
    }

    @Override
    public List<SseEventBuilder> finished(int choice, GenerationResult result) {
        return List.of(choices.get(choice).finish(result));
    }

    @Override
    public List<SseEventBuilder> end(List<GenerationResult> results) {
        List<SseEventBuilder> events = new ArrayList<>(2);
        if (includeUsage) {
            events.add(SseEmitter.event().data(" " + json.writeValueAsString(CompletionJson.usageChunk(
                    CompletionJson.Header.of(streamTaskId, created, model), CompletionJson.usageOfChoices(results)))));
        }
        events.add(CompletionStreamFormat.done());
        return events;
    }

    @Override
    public List<SseEventBuilder> error(ProblemDetail problem) {
        return choices.get(0).error(problem);
    }
}
