package io.butterfly.coordinator.api.rest;

import io.butterfly.common.api.StreamedToken;
import io.butterfly.coordinator.inference.GeneratedToken;
import io.butterfly.coordinator.inference.GenerationResult;
import java.util.List;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter.SseEventBuilder;

/**
 * {@code POST /api/v1/inference/stream}'s events: {@code token} per generated token (its SSE id
 * {@code <task id>:<index>}, see {@link StreamEventId}), then {@code done} with the whole answer exactly as
 * {@code POST /api/v1/inference} gives it, or {@code error} with a problem document.
 */
record NativeStreamFormat(boolean withLogprobs) implements StreamFormat {

    @Override
    public List<SseEventBuilder> token(GeneratedToken t) {
        StreamedToken event = new StreamedToken(t.taskId(), t.index(), t.tokenId(), t.text(), t.logprob(),
                withLogprobs ? InferenceController.step(t.topLogprobs()) : null);
        return List.of(SseEmitter.event().id(StreamEventId.of(t)).name("token").data(event, MediaType.APPLICATION_JSON));
    }

    @Override
    public List<SseEventBuilder> done(GenerationResult result) {
        return event("done", InferenceController.toJson(result, withLogprobs));
    }

    @Override
    public List<SseEventBuilder> error(ProblemDetail problem) {
        return event("error", ProblemHandler.flatten(problem));
    }

    private static List<SseEventBuilder> event(String name, Object data) {
        return List.of(SseEmitter.event().name(name).data(data, MediaType.APPLICATION_JSON));
    }
}
