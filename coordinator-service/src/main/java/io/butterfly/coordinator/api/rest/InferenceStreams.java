package io.butterfly.coordinator.api.rest;

import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.inference.AdmittedTask;
import io.butterfly.coordinator.inference.GeneratedToken;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.InferenceService;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.stereotype.Component;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

/**
 * Streamed generations as server-sent events: a {@code token} event per generated token as soon as it is chosen,
 * then {@code done} with the whole answer as {@code POST /api/v1/inference} gives it, or {@code error} with a
 * problem document if the generation fails once the stream has begun (before that, a refusal is an ordinary
 * problem response). A client that goes away ends its task, logged as failed with its KV caches freed, instead of
 * leaving it to run for nobody.
 */
@Component
public class InferenceStreams implements DisposableBean {

    /** The stream's client has gone (or the stream timed out): the task is ended with this as its error. */
    static final class ClientGoneException extends RuntimeException {
        ClientGoneException(Throwable cause) {
            super("the client closed the stream", cause);
        }
    }

    private final InferenceService inference;
    private final long timeoutMs;
    /** One thread per streamed task; their number is bounded by admission, which each holds a place of. */
    private final ExecutorService runners;

    public InferenceStreams(InferenceService inference, CoordinatorProperties props) {
        this.inference = inference;
        this.timeoutMs = props.taskTimeout().toMillis();
        AtomicInteger n = new AtomicInteger();
        this.runners = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "inference-stream-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Admits the request (a refusal is thrown here, as a problem response) and starts its generation, whose events
     * the returned emitter sends.
     */
    SseEmitter start(GenerationRequest request, boolean withLogprobs) {
        AdmittedTask task = inference.admit(request);
        SseEmitter emitter = new SseEmitter(timeoutMs);
        AtomicBoolean gone = new AtomicBoolean();
        emitter.onTimeout(() -> gone.set(true));
        emitter.onError(e -> gone.set(true));
        try {
            runners.execute(() -> run(task, new Events(emitter, gone), withLogprobs));
        } catch (RejectedExecutionException e) { // shutting down
            task.close();
            throw e;
        }
        return emitter;
    }

    private void run(AdmittedTask task, Events events, boolean withLogprobs) {
        try {
            GenerationResult result = inference.run(task, token -> events.send("token", tokenJson(token, withLogprobs)));
            events.send("done", InferenceController.toJson(result, withLogprobs));
            events.complete();
        } catch (ClientGoneException e) {
            events.complete();
        } catch (RuntimeException e) {
            try {
                events.send("error", problemJson(ProblemHandler.afterStreamStarted(e)));
            } catch (ClientGoneException ignored) {
                // nobody to tell
            }
            events.complete();
        }
    }

    static Map<String, Object> tokenJson(GeneratedToken t, boolean withLogprobs) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("task_id", t.taskId());
        m.put("index", t.index());
        m.put("token_id", t.tokenId());
        m.put("text", t.text());
        m.put("logprob", t.logprob());
        if (withLogprobs) {
            m.put("logprobs", InferenceController.step(t.topLogprobs()));
        }
        return m;
    }

    private static Map<String, Object> problemJson(ProblemDetail p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", p.getType().toString());
        m.put("title", p.getTitle());
        m.put("status", p.getStatus());
        m.put("detail", p.getDetail());
        if (p.getProperties() != null) {
            m.putAll(p.getProperties());
        }
        return m;
    }

    @Override
    public void destroy() {
        runners.shutdownNow();
    }

    /** One stream's emitter; a send that cannot reach the client says so as {@link ClientGoneException}. */
    private record Events(SseEmitter emitter, AtomicBoolean gone) {

        void send(String name, Object data) {
            if (gone.get()) {
                throw new ClientGoneException(null);
            }
            try {
                emitter.send(SseEmitter.event().name(name).data(data, MediaType.APPLICATION_JSON));
            } catch (IOException | IllegalStateException e) {
                gone.set(true);
                throw new ClientGoneException(e);
            }
        }

        void complete() {
            try {
                emitter.complete();
            } catch (IllegalStateException alreadyDone) {
                // completed by the container (timeout, client error)
            }
        }
    }
}
