package io.butterfly.coordinator.api.rest;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.inference.AdmittedTask;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.common.error.ErrorCode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.http.MediaType;
import org.springframework.http.server.ServerHttpResponse;
import org.springframework.stereotype.Component;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

/**
 * Streamed generations as server-sent events, each token as soon as it is chosen, in a {@link StreamFormat}
 * (Butterfly's own events, or OpenAI's completion chunks). Everything that can refuse a task, up to and
 * including the first pipeline step (a stage's KV budget, the task's log entry), happens before the response
 * starts, so a refusal is an ordinary problem response with its status. A client that goes away ends its task,
 * logged as failed with its KV caches freed, instead of leaving it to run for nobody.
 */
@Component
public class InferenceStreams implements DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(InferenceStreams.class);

    /** The stream cannot go on (client gone, timed out, coordinator stopping): the task ends with this as its error. */
    static final class StreamEndedException extends RuntimeException {
        StreamEndedException(String why, Throwable cause) {
            super(why, cause);
        }
    }

    static final String CLIENT_GONE = "the client closed the stream";
    static final String TIMED_OUT = "the stream passed butterfly.coordinator.task-timeout";
    static final String SHUTTING_DOWN = "the coordinator is shutting down";

    private final InferenceService inference;
    private final long timeoutMs;
    /** How long a request waits for its first token before the stream starts anyway: a step's own deadline. */
    private final long firstTokenWaitMs;
    /** One thread per streamed task; each holds a task's admission place while it runs the task. */
    private final ExecutorService runners;
    private volatile boolean shuttingDown;

    public InferenceStreams(InferenceService inference, CoordinatorProperties props) {
        this.inference = inference;
        this.timeoutMs = props.taskTimeout().toMillis();
        this.firstTokenWaitMs = TimeUnit.SECONDS.toMillis(props.stepTimeoutSeconds() + 5);
        AtomicInteger n = new AtomicInteger();
        this.runners = Executors.newCachedThreadPool(r -> {
            Thread t = new Thread(r, "inference-stream-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /**
     * Admits the request and runs it until its first token; a refusal up to then is thrown here (a problem
     * response). {@code formatFor} may refuse the admitted task too. The returned emitter sends the events, the ones so
     * far included.
     */
    public SseEmitter start(GenerationRequest request, Function<AdmittedTask, StreamFormat> formatFor) {
        AdmittedTask task = inference.admit(request);
        StreamFormat format;
        try {
            format = formatFor.apply(task);
        } catch (RuntimeException e) {
            task.close();
            throw e;
        }
        SseEmitter emitter = new Utf8SseEmitter(timeoutMs);
        Events events = new Events(emitter, new AtomicReference<>());
        emitter.onTimeout(() -> events.mark(TIMED_OUT));
        emitter.onError(e -> events.mark(CLIENT_GONE));
        CompletableFuture<Void> firstToken = new CompletableFuture<>();
        try {
            runners.execute(() -> run(task, format, events, firstToken));
        } catch (RejectedExecutionException e) {
            task.close();
            throw shuttingDown(e);
        }
        try {
            firstToken.get(firstTokenWaitMs, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : new IllegalStateException(e.getCause());
        } catch (TimeoutException slow) {
            // the step has its own deadline; the stream starts and carries the outcome
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            events.mark(SHUTTING_DOWN);
        }
        return emitter;
    }

    private void run(AdmittedTask task, StreamFormat format, Events events, CompletableFuture<Void> firstToken) {
        try {
            GenerationResult result = inference.run(task, token -> {
                if (shuttingDown) {
                    throw shuttingDown(null); // told to the client, logged as the task's failure
                }
                events.send(format.token(token));
                firstToken.complete(null);
            });
            events.send(format.done(result));
        } catch (StreamEndedException ended) {
            // nobody left to tell
        } catch (RuntimeException e) {
            if (!firstToken.completeExceptionally(e)) { // the request thread answers a failure before the first token
                events.sendError(() -> format.error(ProblemHandler.afterStreamStarted(e)));
            }
        } finally {
            firstToken.complete(null);
            events.complete();
        }
    }

    private static ButterflyException shuttingDown(Throwable cause) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE,
                SHUTTING_DOWN + ": retry on another replica", Map.of(), cause);
    }

    /**
     * Running streams end their tasks at their next token (logged as failed, KV caches freed) while the control log
     * and the channels to the stages are still open: this bean goes before the inference service it uses.
     */
    @Override
    public void destroy() throws InterruptedException {
        shuttingDown = true;
        runners.shutdown();
        runners.awaitTermination(5, TimeUnit.SECONDS);
    }

    /**
     * Declares the charset event streams always have (UTF-8): Spring writes text data in the response's charset, and
     * without one in its content type would write ISO-8859-1.
     */
    private static final class Utf8SseEmitter extends SseEmitter {

        Utf8SseEmitter(long timeoutMs) {
            super(timeoutMs);
        }

        @Override
        protected void extendResponse(ServerHttpResponse outputMessage) {
            outputMessage.getHeaders().setContentType(new MediaType(MediaType.TEXT_EVENT_STREAM, StandardCharsets.UTF_8));
            super.extendResponse(outputMessage);
        }
    }

    /** One stream's emitter; a send that cannot go out ends the stream with its reason. */
    private record Events(SseEmitter emitter, AtomicReference<String> ended) {

        void send(List<SseEmitter.SseEventBuilder> events) {
            String why = ended.get();
            if (why != null) {
                throw new StreamEndedException(why, null);
            }
            try {
                for (SseEmitter.SseEventBuilder event : events) {
                    emitter.send(event);
                }
            } catch (IOException e) {
                end(CLIENT_GONE, e);
            } catch (IllegalStateException e) {
                // the container completed the response (timeout, client error) just before this send
                String reason = ended.get();
                if (reason == null) {
                    throw e;
                }
                throw new StreamEndedException(reason, e);
            }
        }

        /** The events are made here too: a failure making them must not end the runner without a word. */
        void sendError(Supplier<List<SseEmitter.SseEventBuilder>> events) {
            try {
                send(events.get());
            } catch (StreamEndedException nobodyToTell) {
                // the client is gone
            } catch (RuntimeException unsent) {
                log.warn("the error event of a stream was not sent", unsent);
            }
        }

        /** Marks the stream ended; the first reason given stays. */
        void mark(String why) {
            ended.compareAndSet(null, why);
        }

        private void end(String why, Throwable cause) {
            mark(why);
            throw new StreamEndedException(ended.get(), cause);
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
