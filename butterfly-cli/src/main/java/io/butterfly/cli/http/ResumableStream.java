package io.butterfly.cli.http;

import io.butterfly.common.error.Backoff;
import io.github.resilience4j.retry.Retry;
import io.github.resilience4j.retry.RetryConfig;
import java.io.IOException;
import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A generation streamed as server-sent events that outlives its coordinator: when the stream breaks before its
 * {@code done} (or final {@code error}) event, the same request goes to the next replica with the last token event's
 * id as {@code Last-Event-ID} (the SSE standard's reconnection), and the rest of the same generation follows there,
 * each token once. An {@code error} event marked {@code "resumable": true} (the replica is stopping, or let the
 * generation go) is a break too. Before the first token nothing can be resumed: a replica that refuses the connection
 * is skipped, any other failure is the caller's.
 */
public final class ResumableStream {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    /** Statuses a replica answers while it cannot take the stream yet (an election, a recovery, a full queue). */
    private static final Set<Integer> NOT_YET = Set.of(409, 429, 503);
    /** The pause after each round through the replicas, by reconnect attempts so far. */
    private static final Backoff RECONNECT_BACKOFF = Backoff.exponential(Duration.ofMillis(100), Duration.ofSeconds(1));

    /** Receives the stream's events (never a resumable error) in order, each token once. */
    public interface Handler {
        void onEvent(String name, String data) throws IOException;
    }

    /**
     * How the stream ended.
     *
     * @param status     200 once it ran to its {@code done} or final {@code error} event; otherwise the refusal's status
     * @param body       the refusal's body (a problem document)
     * @param reconnects how many times the stream was picked up again
     */
    public record Outcome(int status, String body, int reconnects) {
    }

    private final List<String> urls;
    private final Duration readTimeout;
    private final Duration resumeWithin;
    private final Consumer<String> notices;

    /**
     * @param urls         the stream's URL at each replica, the preferred one first
     * @param readTimeout  how long a connection may stay silent
     * @param resumeWithin how long to keep trying to pick a broken stream up again
     * @param notices      told each reconnection, for the user
     */
    public ResumableStream(List<String> urls, Duration readTimeout, Duration resumeWithin, Consumer<String> notices) {
        if (urls.isEmpty()) {
            throw new IllegalArgumentException("a stream needs a URL");
        }
        this.urls = List.copyOf(urls);
        this.readTimeout = readTimeout;
        this.resumeWithin = resumeWithin;
        this.notices = notices;
    }

    public Outcome post(String json, Handler handler) throws IOException {
        Connections c = new Connections();
        Retry retry = Retry.of("resumable-stream", RetryConfig.custom()
                .maxAttempts(Integer.MAX_VALUE) // bounded by resumeWithin instead
                .intervalBiFunction((attempts, outcome) -> ((Broken) outcome.getLeft()).waitMillis)
                .retryOnException(e -> e instanceof Broken)
                .build());
        try {
            return retry.executeCheckedSupplier(() -> c.connect(json, handler));
        } catch (Broken interrupted) {
            throw new IOException("interrupted while resuming the stream after event " + c.lastId);
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IOException(e);
        }
    }

    /** Broken (or refused, or not yet served): to be tried at the next replica after {@code waitMillis}. */
    private static final class Broken extends RuntimeException {
        final long waitMillis;

        Broken(long waitMillis) {
            super(null, null, false, false);
            this.waitMillis = waitMillis;
        }
    }

    /** The tries of one stream, each at the next replica: where it got to and since when it has been broken. */
    private final class Connections {
        String lastId;
        int at;
        int reconnects;
        long brokeAt;

        /** One connection: the stream's outcome, or {@link Broken} to be picked up again. */
        Outcome connect(String json, Handler handler) throws IOException {
            String url = urls.get(at % urls.size());
            Stream s = new Stream(handler, lastId);
            try {
                PlainHttp.Response r = PlainHttp.postForEvents(url, json, readTimeout,
                        lastId == null ? Map.of() : Map.of("Last-Event-ID", lastId), s::onEvent);
                lastId = s.lastId;
                if (r.status() == 200 && s.ended) {
                    return new Outcome(200, "", reconnects);
                }
                if (r.status() != 200 && (lastId == null || !NOT_YET.contains(r.status()))) {
                    return new Outcome(r.status(), r.body(), reconnects);
                }
            } catch (ConnectException refused) {
                lastId = s.lastId;
                if (lastId == null && at + 1 >= urls.size() && brokeAt == 0) {
                    throw refused; // no replica answers at all
                }
            } catch (IOException broken) {
                lastId = s.lastId;
                if (lastId == null) {
                    throw broken; // it may have started: without an event id it cannot be picked up, only repeated
                }
            }
            long now = System.nanoTime();
            if (brokeAt == 0) {
                brokeAt = now;
            } else if (now - brokeAt > resumeWithin.toNanos()) {
                throw new IOException("the stream broke after event " + lastId + " and no replica of " + urls
                        + " took it up within " + resumeWithin);
            }
            at++;
            reconnects += lastId == null ? 0 : 1;
            if (lastId != null) {
                notices.accept("stream broke after event " + lastId + "; resuming at " + urls.get(at % urls.size()));
            }
            // The next replica at once; a pause after each round of them.
            throw new Broken(at % urls.size() == 0 ? RECONNECT_BACKOFF.millis(at - 1) : 0);
        }
    }

    /** One connection's events: ids remembered, a resumable error held back, the end noted. */
    private static final class Stream {
        private final Handler handler;
        String lastId;
        boolean ended;

        Stream(Handler handler, String lastId) {
            this.handler = handler;
            this.lastId = lastId;
        }

        void onEvent(String id, String name, String data) throws IOException {
            if (name.equals("error") && resumable(data)) {
                return; // the replica let the generation go: it goes on elsewhere
            }
            if (id != null) {
                lastId = id;
            }
            handler.onEvent(name, data);
            ended |= name.equals("done") || name.equals("error");
        }
    }

    private static boolean resumable(String problem) {
        try {
            JsonNode p = JSON.readTree(problem);
            return p.path("resumable").asBoolean(false);
        } catch (RuntimeException notJson) {
            return false;
        }
    }

    /** The stream's URL at {@code base} and at the other replicas (each a base URL), the base first, without repeats. */
    public static List<String> at(String base, List<String> replicas, String path) {
        List<String> out = new ArrayList<>();
        out.add(base + path);
        for (String r : replicas) {
            if (!out.contains(r + path)) {
                out.add(r + path);
            }
        }
        return out;
    }
}
