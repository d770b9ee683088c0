package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.inference.GeneratedToken;
import io.butterfly.coordinator.inference.GenerationResult;
import java.util.List;
import org.springframework.http.ProblemDetail;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter.SseEventBuilder;

/**
 * The events several choices of one request (OpenAI's {@code n}) are streamed as, in one response: each choice's
 * tokens and end as they come, interleaved (each chunk names its choice's index), then the stream's end once every
 * choice has ended. {@link InferenceStreams#startChoices} runs the tasks and sends what these give.
 */
public interface ChoicesFormat {

    /** The events for one token of choice {@code choice}, as soon as it is chosen. */
    List<SseEventBuilder> token(int choice, GeneratedToken token);

    /** The events that end choice {@code choice}, which completed. */
    List<SseEventBuilder> finished(int choice, GenerationResult result);

    /** The events that end the stream once every choice has: {@code results} in choice order. */
    List<SseEventBuilder> end(List<GenerationResult> results);

    /** The events that end a stream one of whose choices failed after the first token. */
    List<SseEventBuilder> error(ProblemDetail problem);
}
