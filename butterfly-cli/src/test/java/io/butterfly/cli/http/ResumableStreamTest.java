package io.butterfly.cli.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.butterfly.testsupport.Ports;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A stream picked up at the next replica with {@code Last-Event-ID} when it breaks: stand-in coordinators (JDK
 * HttpServers) that stream some token events and then drop the connection, or refuse it.
 */
class ResumableStreamTest {

    private final List<HttpServer> servers = new ArrayList<>();
    /** Each request a stand-in got: its Last-Event-ID header (or "-") and its body. */
    private final List<String> requests = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() {
        servers.forEach(s -> s.stop(0));
    }

    private static String token(int i) {
        return "id:t1:" + i + "\nevent:token\ndata:{\"index\": " + i + "}\n\n";
    }

    private static final String DONE = "event:done\ndata:{\"token_ids\": [0, 1, 2, 3, 4]}\n\n";

    /** A stand-in that answers each request with {@code events} (and then closes the stream, done or not). */
    private String coordinator(String events) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        s.createContext("/stream", exchange -> {
            String last = exchange.getRequestHeaders().getFirst("Last-Event-ID");
            requests.add((last == null ? "-" : last) + " " + new String(exchange.getRequestBody().readAllBytes(),
                    StandardCharsets.UTF_8));
            send(exchange, 200, events);
        });
        s.start();
        servers.add(s);
        return "http://127.0.0.1:" + s.getAddress().getPort() + "/stream";
    }

    private static void send(HttpExchange exchange, int status, String body) throws IOException {
        exchange.getResponseHeaders().add("Content-Type", status == 200 ? "text/event-stream" : "application/problem+json");
        exchange.sendResponseHeaders(status, 0);
        try (OutputStream o = exchange.getResponseBody()) {
            o.write(body.getBytes(StandardCharsets.UTF_8));
        }
    }

    private List<String> received = new CopyOnWriteArrayList<>();

    private ResumableStream.Outcome post(List<String> urls) throws IOException {
        return new ResumableStream(urls, Duration.ofSeconds(10), Duration.ofSeconds(10), notice -> { })
                .post("{\"prompt\": \"hi\"}", (name, data) -> received.add(name + " " + data));
    }

    @Test
    void aBrokenStreamGoesOnAtTheNextReplicaFromItsLastEvent() throws Exception {
        String dies = coordinator(token(0) + token(1) + token(2)); // then the connection ends without done
        String takesOver = coordinator(token(3) + token(4) + DONE);
        ResumableStream.Outcome outcome = post(List.of(dies, takesOver));

        assertThat(outcome.status()).isEqualTo(200);
        assertThat(outcome.reconnects()).isEqualTo(1);
        assertThat(received).containsExactly("token {\"index\": 0}", "token {\"index\": 1}", "token {\"index\": 2}",
                "token {\"index\": 3}", "token {\"index\": 4}", "done {\"token_ids\": [0, 1, 2, 3, 4]}");
        assertThat(requests).containsExactly("- {\"prompt\": \"hi\"}", "t1:2 {\"prompt\": \"hi\"}");
    }

    /** A replica that stops tells its clients the generation goes on elsewhere: that error is a break, not the end. */
    @Test
    void aResumableErrorEventIsABreakAndADeadReplicaIsSkipped() throws Exception {
        String stopping = coordinator(token(0) + "event:error\ndata:{\"status\": 503, \"resumable\": true}\n\n");
        String dead = "http://127.0.0.1:" + Ports.free() + "/stream";
        String takesOver = coordinator(token(1) + token(2) + token(3) + token(4) + DONE);
        ResumableStream.Outcome outcome = post(List.of(stopping, dead, takesOver));

        assertThat(outcome.status()).isEqualTo(200);
        assertThat(received).hasSize(6).doesNotContain("error {\"status\": 503, \"resumable\": true}");
        assertThat(requests).containsExactly("- {\"prompt\": \"hi\"}", "t1:0 {\"prompt\": \"hi\"}");
    }

    @Test
    void aFinalErrorEndsTheStreamAndARefusalBeforeItStartsIsTheCallers() throws Exception {
        String fails = coordinator(token(0) + "event:error\ndata:{\"status\": 502}\n\n");
        assertThat(post(List.of(fails, coordinator(DONE))).status()).isEqualTo(200);
        assertThat(received).containsExactly("token {\"index\": 0}", "error {\"status\": 502}");
        assertThat(requests).hasSize(1);

        HttpServer refusing = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        refusing.createContext("/stream", exchange -> send(exchange, 400, "{\"field\": \"max_tokens\"}"));
        refusing.start();
        servers.add(refusing);
        ResumableStream.Outcome refused = post(List.of("http://127.0.0.1:" + refusing.getAddress().getPort() + "/stream"));
        assertThat(refused.status()).isEqualTo(400);
        assertThat(refused.body()).contains("max_tokens");

        assertThatThrownBy(() -> post(List.of("http://127.0.0.1:" + Ports.free() + "/stream")))
                .isInstanceOf(ConnectException.class);
    }
}
