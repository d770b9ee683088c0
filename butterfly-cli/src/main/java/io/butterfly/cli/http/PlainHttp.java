package io.butterfly.cli.http;

import io.butterfly.cli.home.ButterflyHome;
import io.butterfly.cli.home.ClusterApiKeys;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;

/**
 * The command-line client's HTTP calls, over the JDK's {@link HttpURLConnection}. Not
 * {@code java.net.http.HttpClient}: its selector thread waits in native code, and a JDK 17 VM waits
 * ~300 ms at exit for threads in native code, which every {@code ./butterfly status} and {@code generate}
 * paid, and the READY watcher too (so {@code up} returned, and bench-load stopped its clock, 0.3 s late).
 */
public final class PlainHttp {

    /** A response: its status code and body (the error body for a 4xx/5xx). */
    public record Response(int status, String body) {
    }

    private PlainHttp() {
    }

    public static Response get(String url, Duration timeout) throws IOException {
        return exchange(open(url, timeout));
    }

    public static Response postJson(String url, String json, Duration timeout) throws IOException {
        return exchange(post(url, json, "*/*", timeout));
    }

    /** Receives each server-sent event of a stream as it arrives: its name and its data. */
    public interface EventHandler {
        void onEvent(String name, String data) throws IOException;
    }

    /** Receives each server-sent event with its id (null when it has none). */
    public interface IdentifiedEventHandler {
        void onEvent(String id, String name, String data) throws IOException;
    }

    /**
     * POSTs JSON to an endpoint answering with server-sent events and hands each event to {@code handler} as it
     * arrives ({@link #readEvents}); answers the status and, when that is not 200, the (problem) body.
     */
    public static Response postForEvents(String url, String json, Duration timeout, EventHandler handler) throws IOException {
        return postForEvents(url, json, timeout, Map.of(), (id, name, data) -> handler.onEvent(name, data));
    }

    /** {@link #postForEvents(String, String, Duration, EventHandler)} with request headers, each event with its id. */
    public static Response postForEvents(String url, String json, Duration timeout, Map<String, String> headers,
                                         IdentifiedEventHandler handler) throws IOException {
        HttpURLConnection c = open(url, timeout);
        headers.forEach(c::setRequestProperty);
        send(c, json, "text/event-stream");
        if (c.getResponseCode() != 200) {
            return exchange(c);
        }
        try (InputStream in = c.getInputStream()) {
            readEvents(in, handler);
        }
        return new Response(200, "");
    }

    /**
     * Hands each server-sent event of {@code stream} to {@code handler} as soon as its blank line is read, as the
     * text/event-stream format has them: {@code event:} and {@code data:} fields, a blank line ending each.
     */
    public static void readEvents(InputStream stream, EventHandler handler) throws IOException {
        readEvents(stream, (id, name, data) -> handler.onEvent(name, data));
    }

    /** {@link #readEvents(InputStream, EventHandler)}, with each event's {@code id:} field. */
    public static void readEvents(InputStream stream, IdentifiedEventHandler handler) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8));
        String name = "message";
        String id = null;
        StringBuilder data = new StringBuilder();
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.isEmpty()) {
                if (!data.isEmpty()) {
                    handler.onEvent(id, name, data.toString());
                }
                name = "message";
                id = null;
                data.setLength(0);
            } else if (line.startsWith("event:")) {
                name = line.substring(6).strip();
            } else if (line.startsWith("id:")) {
                id = line.substring(3).strip();
            } else if (line.startsWith("data:")) {
                data.append(data.isEmpty() ? "" : "\n").append(line.substring(5).stripLeading());
            }
        }
    }

    /** Sends a JSON body by POST, accepting {@code accept}; the answer is read from the returned connection. */
    private static HttpURLConnection post(String url, String json, String accept, Duration timeout) throws IOException {
        HttpURLConnection c = open(url, timeout);
        send(c, json, accept);
        return c;
    }

    private static void send(HttpURLConnection c, String json, String accept) throws IOException {
        c.setRequestMethod("POST");
        c.setRequestProperty("Content-Type", "application/json");
        c.setRequestProperty("Accept", accept);
        c.setDoOutput(true);
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        c.setFixedLengthStreamingMode(bytes.length);
        try (OutputStream out = c.getOutputStream()) {
            out.write(bytes);
        }
    }

    /**
     * Every call carries a bearer key (docs/security.md): {@code BUTTERFLY_API_KEY} when it is set, otherwise the user
     * key {@code up} made under {@code .butterfly/keys}, when there is one.
     */
    private static HttpURLConnection open(String url, Duration timeout) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
        c.setConnectTimeout(5_000);
        c.setReadTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        String key = bearerKey();
        if (key != null) {
            c.setRequestProperty("Authorization", "Bearer " + key);
        }
        return c;
    }

    /** The key the client commands send, or null for none. */
    public static String bearerKey() {
        String key = System.getenv("BUTTERFLY_API_KEY");
        if (key != null && !key.isBlank()) {
            return key.strip();
        }
        return ClusterApiKeys.readKey(ButterflyHome.fromEnvironment().keys().resolve(ClusterApiKeys.USER_FILE));
    }

    private static Response exchange(HttpURLConnection c) throws IOException {
        int status = c.getResponseCode();
        try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
            return new Response(status, in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }
}
