package io.butterfly.worker.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The command-line client's HTTP calls, over the JDK's {@link HttpURLConnection}. Not
 * {@code java.net.http.HttpClient}: its selector thread waits in native code, and a JDK 17 VM waits
 * ~300 ms at exit for threads in native code, which every {@code ./butterfly status} and {@code generate}
 * paid, and the READY watcher too (so {@code up} returned, and bench-load stopped its clock, 0.3 s late).
 */
final class PlainHttp {

    /** A response: its status code and body (the error body for a 4xx/5xx). */
    record Response(int status, String body) {
    }

    private PlainHttp() {
    }

    static Response get(String url, Duration timeout) throws IOException {
        return exchange(open(url, timeout));
    }

    static Response postJson(String url, String json, Duration timeout) throws IOException {
        HttpURLConnection c = open(url, timeout);
        c.setRequestMethod("POST");
        c.setRequestProperty("Content-Type", "application/json");
        c.setDoOutput(true);
        byte[] bytes = json.getBytes(StandardCharsets.UTF_8);
        c.setFixedLengthStreamingMode(bytes.length);
        try (OutputStream out = c.getOutputStream()) {
            out.write(bytes);
        }
        return exchange(c);
    }

    private static HttpURLConnection open(String url, Duration timeout) throws IOException {
        HttpURLConnection c = (HttpURLConnection) URI.create(url).toURL().openConnection();
        c.setConnectTimeout(5_000);
        c.setReadTimeout((int) Math.min(Integer.MAX_VALUE, timeout.toMillis()));
        return c;
    }

    private static Response exchange(HttpURLConnection c) throws IOException {
        int status = c.getResponseCode();
        try (InputStream in = status >= 400 ? c.getErrorStream() : c.getInputStream()) {
            return new Response(status, in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }
}
