package io.butterfly.coordinator.api.rest;

import io.butterfly.common.concurrent.DaemonThreads;
import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.error.ErrorCode;
import io.butterfly.common.error.ErrorKind;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.inference.GenerationRequest;
import io.butterfly.coordinator.inference.GenerationResult;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.api.security.Requesters;
import io.butterfly.coordinator.inference.RequestHandle;
import io.butterfly.coordinator.inference.Requester;
import io.butterfly.coordinator.inference.TokenListener;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
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
 * (Butterfly's own events, or OpenAI's completion chunks). The response starts with the first token: everything that
 * can refuse a request, up to its first pipeline step, is an ordinary problem response with its status. No thread
 * waits for a stream: the engine hands tokens over, and each stream's writes go out in order on a shared pool.
 *
 * <p>Each token event has an id ({@link StreamEventId}). A client that goes away leaves its generation paused, its KV
 * caches freed and its progress recorded: sending the same request again with {@code Last-Event-ID}, to any replica
 * and within the recovery timeout, streams the rest of the same generation, each token once.
 */
@Component
public class InferenceStreams implements DisposableBean {

    private static final Logger log = LoggerFactory.getLogger(InferenceStreams.class);

    /** The stream cannot go on (client gone, timed out, coordinator stopping): the generation ends with this. */
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
    private final ExecutorService writers;
    private final Set<RequestHandle> open = ConcurrentHashMap.newKeySet();

    public InferenceStreams(InferenceService inference, CoordinatorProperties props) {
        this.inference = inference;
        this.timeoutMs = props.taskTimeout().toMillis();
        this.writers = Executors.newCachedThreadPool(DaemonThreads.numbered("inference-stream"));
    }

    /**
     * Queues the request, the current request's API key's task (or, with {@code lastEventId}, picks up the generation
     * that event belongs to after it, if the key may see it: {@code UnknownTaskException} otherwise); the
     * answer completes with the emitter once the first token is out (the emitter then sends the rest), or with the
     * refusal or failure that came first. {@code formatFor} may refuse the queued request too.
     */
    public CompletableFuture<SseEmitter> start(GenerationRequest request, String lastEventId,
                                               Function<RequestHandle, StreamFormat> formatFor) {
        StreamEventId resumeAfter = lastEventId == null ? null : StreamEventId.parse(lastEventId);
        SseEmitter emitter = new Utf8SseEmitter(timeoutMs);
        Events events = new Events(emitter, new AtomicReference<>());
        SerialDelivery delivery = new SerialDelivery(writers);
        AtomicReference<StreamFormat> format = new AtomicReference<>();
        CompletableFuture<SseEmitter> started = new CompletableFuture<>();
        AtomicReference<RequestHandle> self = new AtomicReference<>();
        TokenListener listener = token -> delivery.execute(() -> {
            try {
                events.send(format.get().token(token));
                started.complete(emitter);
            } catch (StreamEndedException ended) {
                // Nobody to write to: the generation stops at its next step, resumable by a client that comes back.
                self.get().detach(ended.getMessage());
            }
        });
        Requester requester = Requesters.current();
        RequestHandle handle = resumeAfter == null ? inference.submit(request, listener, requester)
                : inference.resume(resumeAfter.taskId(), resumeAfter.index(), request, listener, requester);
        self.set(handle);
        try {
            format.set(formatFor.apply(handle));
        } catch (RuntimeException e) {
            handle.cancel(e.getMessage());
            throw e;
        }
        open.add(handle);
        emitter.onTimeout(() -> {
            events.mark(TIMED_OUT);
            handle.cancel(TIMED_OUT);
        });
        emitter.onError(e -> {
            events.mark(CLIENT_GONE);
            handle.detach(CLIENT_GONE);
        });
        handle.result().whenComplete((result, failure) -> delivery.execute(() -> {
            open.remove(handle);
            if (failure == null) {
                try {
                    events.send(format.get().done(result));
                } catch (StreamEndedException nobodyToTell) {
                    // the client is gone; the generation was complete anyway
                }
                started.complete(emitter);
            } else {
                RuntimeException cause = unwrap(failure);
                // Before the first token the client hears the failure as a problem response; after it, as an event.
                if (!started.completeExceptionally(cause)) {
                    events.sendError(() -> format.get().error(ProblemHandler.afterStreamStarted(cause)));
                }
            }
            events.complete();
        }));
        // No event id goes out before the task's start is recorded: any id a client holds can be resumed. A start the
        // log could not record fails the request before its first event (503), its tokens held back go nowhere.
        inference.startRecorded(handle).whenComplete((recorded, notRecorded) -> {
            if (notRecorded != null) {
                RuntimeException cause = unwrap(notRecorded);
                events.mark(cause.getMessage());
                started.completeExceptionally(cause);
                handle.cancel(cause.getMessage());
            }
            delivery.start();
        });
        return started;
    }

    /**
     * Several choices of one request (OpenAI's {@code n}) as one stream: all admitted before any runs (a refusal of one
     * refuses them all, before any work), their tokens sent as they are chosen, interleaved, and the stream's end once
     * every choice has ended. A failure of one choice ends the stream (the others are cancelled): before the first
     * event as a problem response, after it as {@code formatFor}'s error events. Such a stream is not picked up with
     * {@code Last-Event-ID} (an event id names one task): a client gone, or a timeout, cancels every choice. Each
     * choice's task survives a worker loss as any task does (replayed token-identically from its own seed).
     */
    public CompletableFuture<SseEmitter> startChoices(List<GenerationRequest> requests,
                                                      Function<List<RequestHandle>, ChoicesFormat> formatFor) {
        SseEmitter emitter = new Utf8SseEmitter(timeoutMs);
        Events events = new Events(emitter, new AtomicReference<>());
        SerialDelivery delivery = new SerialDelivery(writers);
        AtomicReference<ChoicesFormat> format = new AtomicReference<>();
        CompletableFuture<SseEmitter> started = new CompletableFuture<>();
        List<RequestHandle> handles = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.function.Consumer<String> cancelAll = why -> handles.forEach(h -> h.cancel(why));
        Requester requester = Requesters.current();
        List<InferenceService.Prepared> prepared = new java.util.ArrayList<>(requests.size());
        for (int i = 0; i < requests.size(); i++) {
            int choice = i;
            TokenListener listener = token -> delivery.execute(() -> {
                try {
                    events.send(format.get().token(choice, token));
                    started.complete(emitter);
                } catch (StreamEndedException ended) {
                    cancelAll.accept(ended.getMessage());
                }
            });
            prepared.add(inference.prepare(requests.get(i), listener, requester));
        }
        handles.addAll(inference.submitAll(prepared));
        try {
            format.set(formatFor.apply(List.copyOf(handles)));
        } catch (RuntimeException e) {
            cancelAll.accept(e.getMessage());
            throw e;
        }
        open.addAll(handles);
        emitter.onTimeout(() -> {
            events.mark(TIMED_OUT);
            cancelAll.accept(TIMED_OUT);
        });
        emitter.onError(e -> {
            events.mark(CLIENT_GONE);
            cancelAll.accept(CLIENT_GONE);
        });
        GenerationResult[] results = new GenerationResult[handles.size()];
        int[] left = {handles.size()}; // read and written only by the stream's serial delivery
        for (int i = 0; i < handles.size(); i++) {
            int choice = i;
            RequestHandle handle = handles.get(i);
            handle.result().whenComplete((result, failure) -> delivery.execute(() -> {
                open.remove(handle);
                if (left[0] == 0) {
                    return; // the stream already ended with another choice's failure
                }
                if (failure == null) {
                    results[choice] = result;
                    left[0]--;
                    try {
                        events.send(format.get().finished(choice, result));
                        if (left[0] == 0) {
                            events.send(format.get().end(List.of(results)));
                        }
                    } catch (StreamEndedException nobodyToTell) {
                        // the client is gone; the others were cancelled when it went
                    }
                    if (left[0] == 0) {
                        started.complete(emitter);
                        events.complete();
                    }
                    return;
                }
                left[0] = 0;
                RuntimeException cause = unwrap(failure);
                events.mark(cause.getMessage() == null ? "a choice failed" : cause.getMessage());
                cancelAll.accept("another choice of the request failed: " + cause.getMessage());
                if (!started.completeExceptionally(cause)) {
                    events.sendErrorAfterEnd(() -> format.get().error(ProblemHandler.afterStreamStarted(cause)));
                }
                events.complete();
            }));
        }
        CompletableFuture.allOf(handles.stream().map(inference::startRecorded).toArray(CompletableFuture[]::new))
                .whenComplete((recorded, notRecorded) -> {
                    if (notRecorded != null) {
                        RuntimeException cause = unwrap(notRecorded);
                        events.mark(cause.getMessage());
                        started.completeExceptionally(cause);
                        cancelAll.accept(cause.getMessage());
                    }
                    delivery.start();
                });
        return started;
    }

    private static RuntimeException unwrap(Throwable t) {
        Throwable cause = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
        return cause instanceof RuntimeException r ? r : new IllegalStateException(cause);
    }

    /**
     * Open streams leave at their next token, before the engine itself stops: their progress stays recorded, and
     * their clients are told to resume at another replica (the stream's last event, a 503 problem).
     */
    @Override
    public void destroy() throws InterruptedException {
        open.forEach(h -> h.detach(SHUTTING_DOWN));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!open.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(20); // their last events go out on the writers
        }
        writers.shutdown();
        writers.awaitTermination(5, TimeUnit.SECONDS);
    }

    static ButterflyException shuttingDown(Throwable cause) {
        return new ButterflyException(ErrorCode.INTERNAL_ERROR, ErrorKind.UNAVAILABLE,
                SHUTTING_DOWN + ": retry on another replica", Map.of(), cause);
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
                mark(CLIENT_GONE);
                throw new StreamEndedException(ended.get(), e);
            } catch (IllegalStateException e) {
                // the container completed the response (timeout, client error) just before this send
                String reason = ended.get();
                if (reason == null) {
                    throw e;
                }
                throw new StreamEndedException(reason, e);
            }
        }

        /** The events are made here too: a failure making them must not end the writer without a word. */
        void sendError(Supplier<List<SseEmitter.SseEventBuilder>> events) {
            try {
                send(events.get());
            } catch (StreamEndedException nobodyToTell) {
                // the client is gone
            } catch (RuntimeException unsent) {
                log.warn("the error event of a stream was not sent", unsent);
            }
        }

        /** As {@link #sendError}, on a stream already marked ended (by the failure these events tell). */
        void sendErrorAfterEnd(Supplier<List<SseEmitter.SseEventBuilder>> events) {
            try {
                for (SseEmitter.SseEventBuilder event : events.get()) {
                    emitter.send(event);
                }
            } catch (IOException | IllegalStateException nobodyToTell) {
                // the client is gone, or the container completed the response
            } catch (RuntimeException unsent) {
                log.warn("the error event of a stream was not sent", unsent);
            }
        }

        /** Marks the stream ended; the first reason given stays. */
        void mark(String why) {
            ended.compareAndSet(null, why);
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
