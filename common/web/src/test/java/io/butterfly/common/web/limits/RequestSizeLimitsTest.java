package io.butterfly.common.web.limits;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.web.ProblemDecoration;
import io.butterfly.common.web.auth.ApiKeySecurity;
import io.butterfly.common.web.auth.ApiKeys;
import com.fasterxml.jackson.annotation.JsonProperty;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.catalina.connector.Connector;
import org.apache.coyote.http11.AbstractHttp11Protocol;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.tomcat.TomcatWebServer;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.HttpStatusCode;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.context.request.WebRequest;
import org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 47, item 2: a real embedded Tomcat with the services' auto-configuration refuses a body over the limits before
 * it is read whole. A declared length over {@code butterfly.http.max-request-body} is answered 413 before the body is
 * sent at all; a chunked body once it passes the limit; JSON past the parser's limits (a string, the nesting, the
 * values of an array) as the parser reaches them, naming the field; each as a problem document, which the service's
 * {@link ProblemDecoration} extends (here under {@code /v1/}, as the coordinator adds OpenAI's error object). Before,
 * a 60 M-element {@code token_ids} or a 90 M-character prompt was read whole into the heap (500s from
 * OutOfMemoryError). Limits are set low here so that the bodies stay small.
 */
@SpringBootTest(classes = RequestSizeLimitsTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"spring.mvc.problemdetails.enabled=true", "butterfly.http.max-request-body=64KB",
                "butterfly.http.max-json-depth=8", "butterfly.http.max-json-string-chars=4096",
                "butterfly.http.max-json-tokens=2048"})
class RequestSizeLimitsTest {

    private static final int LIMIT = 64 * 1024;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {
        @Bean
        Echo echo() {
            return new Echo();
        }

        @Bean
        Advice advice() {
            return new Advice();
        }

        /** As the coordinator's: OpenAI's error object under /v1/. */
        @Bean
        ProblemDecoration openAiLike() {
            return (request, problem) -> {
                if (request.getRequestURI().startsWith("/v1/")) {
                    problem.setProperty("error", Map.of("message", problem.getDetail(), "type", "invalid_request_error"));
                }
            };
        }

        @Bean
        SecurityFilterChain open(HttpSecurity http) {
            return ApiKeySecurity.chain(http, ApiKeys.NONE, ApiKeySecurity.checker(ApiKeys.NONE), rules -> { },
                    (request, problem) -> { });
        }
    }

    record Body(String prompt, @JsonProperty("token_ids") List<Long> tokenIds, JsonNode messages) {
    }

    @RestController
    static class Echo {
        @PostMapping(path = {"/api/v1/echo", "/v1/echo"}, consumes = MediaType.APPLICATION_JSON_VALUE)
        Map<String, Integer> echo(@RequestBody Body body) {
            return Map.of("token_ids", body.tokenIds() == null ? 0 : body.tokenIds().size(),
                    "prompt", body.prompt() == null ? 0 : body.prompt().length());
        }
    }

    /** As each service's handler of unreadable bodies: a body over a limit first. */
    @RestControllerAdvice
    static class Advice extends ResponseEntityExceptionHandler {
        @Override
        protected ResponseEntity<Object> handleHttpMessageNotReadable(HttpMessageNotReadableException ex,
                HttpHeaders headers, HttpStatusCode status, WebRequest request) {
            ProblemDetail p = TooLargeProblems.of(ex).orElseGet(() -> ProblemDetail.forStatus(HttpStatus.BAD_REQUEST));
            return ResponseEntity.status(p.getStatus()).contentType(MediaType.APPLICATION_PROBLEM_JSON).body(p);
        }
    }

    @LocalServerPort
    int port;

    @Autowired
    WebServerApplicationContext context;

    @Test
    void aDeclaredLengthOverTheLimitIsRefusedBeforeTheBodyIsSent() throws IOException {
        // 100 MB declared, nothing sent: the answer comes without the body.
        Reply reply = exchange("POST /api/v1/echo HTTP/1.1", "Content-Type: application/json\r\nContent-Length: 104857600\r\n",
                out -> { });

        assertThat(reply.status).isEqualTo(413);
        JsonNode problem = problem(reply);
        assertThat(problem.path("field").asString()).isEqualTo("body");
        assertThat(problem.path("detail").asString()).contains("104857600 bytes", "limit of " + LIMIT,
                "butterfly.http.max-request-body");
        assertThat(problem.has("error")).as("not under /v1/").isFalse();
    }

    @Test
    void underV1TheServicesDecorationIsAdded() throws IOException {
        Reply reply = exchange("POST /v1/echo HTTP/1.1", "Content-Type: application/json\r\nContent-Length: 70000\r\n",
                out -> { });

        assertThat(reply.status).isEqualTo(413);
        assertThat(problem(reply).path("error").path("message").asString()).contains("limit of " + LIMIT);
    }

    @Test
    void aChunkedBodyIsRefusedOnceItPassesTheLimit() throws IOException {
        // A string within the parser's limits, again and again, in chunks: only the byte count stops it.
        String chunk = "\"" + "x".repeat(1000) + "\",";
        Reply reply = exchange("POST /api/v1/echo HTTP/1.1", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n",
                out -> {
                    chunk(out, "{\"messages\": [");
                    for (int i = 0; i < 200 && !Thread.currentThread().isInterrupted(); i++) {
                        try {
                            chunk(out, chunk);
                        } catch (IOException closed) {
                            return; // the server answered and closed: what is asserted below
                        }
                    }
                });

        assertThat(reply.status).isEqualTo(413);
        assertThat(problem(reply).path("field").asString()).isEqualTo("body");
    }

    @Test
    void aStringOverTheParsersLimitIsRefusedNamingItsField() throws IOException {
        Reply reply = post("/api/v1/echo", "{\"prompt\": \"" + "p".repeat(5000) + "\"}");

        assertThat(reply.status).isEqualTo(413);
        JsonNode problem = problem(reply);
        assertThat(problem.path("field").asString()).isEqualTo("prompt");
        assertThat(problem.path("detail").asString()).contains("4096", "butterfly.http.max-json-string-chars");
    }

    @Test
    void anArrayOverTheParsersTokenLimitIsRefusedNamingIt() throws IOException {
        StringBuilder ids = new StringBuilder("{\"token_ids\": [1");
        ids.append(",2".repeat(3000)).append("]}");
        Reply reply = post("/api/v1/echo", ids.toString());

        assertThat(reply.status).isEqualTo(413);
        JsonNode problem = problem(reply);
        assertThat(problem.path("field").asString()).isEqualTo("token_ids");
        assertThat(problem.path("detail").asString()).contains("2048", "butterfly.http.max-json-tokens");
    }

    @Test
    void nestingOverTheParsersLimitIsRefused() throws IOException {
        Reply reply = post("/api/v1/echo", "{\"messages\": " + "[".repeat(20) + "]".repeat(20) + "}");

        assertThat(reply.status).isEqualTo(413);
        assertThat(problem(reply).path("detail").asString()).contains("butterfly.http.max-json-depth");
    }

    @Test
    void whatIsWithinTheLimitsIsRead() throws IOException {
        StringBuilder ids = new StringBuilder("{\"prompt\": \"" + "p".repeat(4000) + "\", \"token_ids\": [1");
        ids.append(",2".repeat(1000)).append("]}");
        Reply reply = post("/api/v1/echo", ids.toString());

        assertThat(reply.status).isEqualTo(200);
        assertThat(JSON.readTree(reply.body).path("token_ids").asInt()).isEqualTo(1001);
    }

    @Test
    void tomcatRefusesFormPostsAndSwallowsRefusedBodiesUpToTheSameLimit() {
        Connector connector = ((TomcatWebServer) context.getWebServer()).getTomcat().getConnector();

        assertThat(connector.getMaxPostSize()).isEqualTo(LIMIT);
        assertThat(((AbstractHttp11Protocol<?>) connector.getProtocolHandler()).getMaxSwallowSize()).isEqualTo(LIMIT);
    }

    private static JsonNode problem(Reply reply) {
        assertThat(reply.headers.get("content-type")).isEqualTo("application/problem+json");
        JsonNode problem = JSON.readTree(reply.body);
        assertThat(problem.path("status").asInt()).isEqualTo(reply.status);
        assertThat(problem.path("title").asString()).isEqualTo(TooLargeProblems.TITLE);
        return problem;
    }

    record Reply(int status, Map<String, String> headers, String body) {
    }

    interface BodyWriter {
        void write(OutputStream out) throws IOException;
    }

    private Reply post(String path, String json) throws IOException {
        byte[] body = json.getBytes(UTF_8);
        return exchange("POST " + path + " HTTP/1.1", "Content-Type: application/json\r\nContent-Length: " + body.length
                + "\r\n", out -> out.write(body));
    }

    private static void chunk(OutputStream out, String data) throws IOException {
        byte[] bytes = data.getBytes(UTF_8);
        out.write((Integer.toHexString(bytes.length) + "\r\n").getBytes(ISO_8859_1));
        out.write(bytes);
        out.write("\r\n".getBytes(ISO_8859_1));
        out.flush();
    }

    /** Raw HTTP/1.1: the headers, then whatever {@code body} writes, then the answer. */
    private Reply exchange(String requestLine, String headers, BodyWriter body) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write((requestLine + "\r\nHost: localhost\r\n" + headers + "Connection: close\r\n\r\n").getBytes(ISO_8859_1));
            out.flush();
            body.write(out);
            InputStream in = socket.getInputStream();
            int status = Integer.parseInt(readLine(in).split(" ")[1]);
            Map<String, String> replyHeaders = new LinkedHashMap<>();
            for (String line = readLine(in); !line.isEmpty(); line = readLine(in)) {
                int colon = line.indexOf(':');
                replyHeaders.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
            }
            if (!"chunked".equalsIgnoreCase(replyHeaders.get("transfer-encoding"))) {
                String length = replyHeaders.get("content-length");
                byte[] bytes = length == null ? in.readAllBytes() : in.readNBytes(Integer.parseInt(length));
                return new Reply(status, replyHeaders, new String(bytes, UTF_8));
            }
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            for (int size = Integer.parseInt(readLine(in), 16); size > 0; size = Integer.parseInt(readLine(in), 16)) {
                bytes.write(in.readNBytes(size));
                readLine(in);
            }
            return new Reply(status, replyHeaders, bytes.toString(UTF_8));
        }
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder line = new StringBuilder();
        for (int c = in.read(); c >= 0 && c != '\n'; c = in.read()) {
            if (c != '\r') {
                line.append((char) c);
            }
        }
        return line.toString();
    }
}
