package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.inference.GeneratedToken;
import io.butterfly.coordinator.inference.GenerationResult;
import java.util.List;
import org.springframework.http.ProblemDetail;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter.SseEventBuilder;

/**
 * The events a streamed generation is written as: Butterfly's own ({@link NativeStreamFormat}) or OpenAI's
 * completion chunks. {@link InferenceStreams} runs the task and sends what these give.
 */
public interface StreamFormat {

    /** The events for one generated token, as soon as it is chosen. */
    List<SseEventBuilder> token(GeneratedToken token);

    /** The events that end a generation that completed. */
    List<SseEventBuilder> done(GenerationResult result);

    /** The events that end a generation that failed after its first token (the status line is long since sent). */
    List<SseEventBuilder> error(ProblemDetail problem);
}
