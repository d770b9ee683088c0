package io.butterfly.common.web;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.web.auth.ApiKeySecurity;
import io.butterfly.common.web.auth.ApiKeys;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import org.apache.catalina.valves.ErrorReportValve;
import jakarta.servlet.http.HttpServletResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.boot.tomcat.TomcatWebServer;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A real embedded Tomcat with the services' auto-configuration: requests Tomcat rejects before Spring sees them are
 * answered in problem+json by {@link ProblemErrorReportValve}, not by Tomcat's HTML page.
 */
@SpringBootTest(classes = TomcatProblemErrorsTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "spring.mvc.problemdetails.enabled=true")
class TomcatProblemErrorsTest {

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {
        @Bean
        Refusals refusals() {
            return new Refusals();
        }

        /** Like a service's ProblemHandler: it would answer an unknown route "No static resource ...". */
        @Bean
        ServiceAdvice serviceAdvice() {
            return new ServiceAdvice();
        }

        /** Like a service without API keys (Spring Security is on this test's class path): every route open. */
        @Bean
        SecurityFilterChain open(HttpSecurity http) {
            return ApiKeySecurity.chain(http, ApiKeys.NONE, ApiKeySecurity.checker(ApiKeys.NONE), rules -> { },
                    (request, problem) -> { });
        }
    }

    @org.springframework.web.bind.annotation.RestControllerAdvice
    static class ServiceAdvice extends org.springframework.web.servlet.mvc.method.annotation.ResponseEntityExceptionHandler {
    }

    /** Errors no exception handler answers: they go to the error path. */
    @RestController
    static class Refusals {
        @GetMapping("/api/v1/busy")
        void busy(HttpServletResponse response) throws IOException {
            response.sendError(503);
        }

        @GetMapping("/api/v1/broken")
        void broken() {
            throw new IllegalStateException("secret internals");
        }
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @LocalServerPort
    int port;

    @Autowired
    WebServerApplicationContext context;

    @ParameterizedTest
    @ValueSource(strings = {"GET /api/v1/%ZZ HTTP/1.1", "GET /api/v1/%00 HTTP/1.1", "GET /a%2fb HTTP/1.1",
            "GET /api/v1/%c0%ae HTTP/1.1", "GET /api/v1/a b HTTP/1.1", "GET /api/v1/a|b HTTP/1.1", "LONG"})
    void aUrlTomcatRejectsIsAProblemOnThePath(String requestLine) throws IOException {
        if (requestLine.equals("LONG")) {
            requestLine = "GET /api/v1/" + "x".repeat(9000) + " HTTP/1.1"; // over the 8 KB request header limit
        }
        Reply reply = send(requestLine, "");

        assertThat(reply.status).isEqualTo(400);
        assertThat(reply.headers.get("content-type")).isEqualTo("application/problem+json");
        JsonNode problem = JSON.readTree(reply.body);
        assertThat(problem.get("type").asString()).isEqualTo("about:blank");
        assertThat(problem.get("title").asString()).isEqualTo("Bad Request");
        assertThat(problem.get("status").asInt()).isEqualTo(400);
        assertThat(problem.get("field").asString()).isEqualTo("path");
        assertThat(problem.get("detail").asString()).startsWith("The server rejected the request line or URL");
        assertThat(reply.body).doesNotContain("api/v1", "%", "xxxx", "<");
    }

    @Test
    void aBadHeaderIsAProblemButNotThePath() throws IOException {
        Reply reply = send("GET /api/v1/ok HTTP/1.1", "X-Big: " + "y".repeat(9000) + "\r\n");

        assertThat(reply.status).isEqualTo(400);
        assertThat(reply.headers.get("content-type")).isEqualTo("application/problem+json");
        JsonNode problem = JSON.readTree(reply.body);
        assertThat(problem.get("status").asInt()).isEqualTo(400);
        assertThat(problem.has("field")).isFalse();
        assertThat(reply.body).doesNotContain("yyyy");
    }

    @Test
    void aMissingRouteIsStillSpringsProblem() throws IOException {
        Reply reply = send("GET /api/v1/nope HTTP/1.1", "");

        assertThat(reply.status).isEqualTo(404);
        assertThat(reply.headers.get("content-type")).isEqualTo("application/problem+json");
        JsonNode problem = JSON.readTree(reply.body);
        assertThat(problem.get("status").asInt()).isEqualTo(404);
        assertThat(problem.get("instance").asString()).isEqualTo("/api/v1/nope"); // Spring's, not the valve's
        // Worded as the error path words it, in every service, ahead of a service's own handler advice.
        assertThat(problem.get("detail").asString()).isEqualTo("No endpoint answers /api/v1/nope");
    }

    @ParameterizedTest
    @ValueSource(strings = {"GET /api/v1/busy HTTP/1.1|503", "GET /api/v1/broken HTTP/1.1|500", "TRACE /api/v1/x HTTP/1.1|405"})
    void anErrorNoHandlerAnswersIsAProblemFromTheErrorPath(String requestAndStatus) throws IOException {
        String[] parts = requestAndStatus.split("\\|");
        Reply reply = send(parts[0], "");

        int status = Integer.parseInt(parts[1]);
        assertThat(reply.status).isEqualTo(status);
        assertThat(reply.headers.get("content-type")).isEqualTo("application/problem+json");
        JsonNode problem = JSON.readTree(reply.body);
        assertThat(problem.get("status").asInt()).isEqualTo(status);
        assertThat(problem.has("timestamp")).as("not Boot's error map").isFalse();
        assertThat(problem.get("instance").asString()).as("the request's path, not the error path")
                .isEqualTo(parts[0].split(" ")[1]);
        assertThat(reply.body).doesNotContain("secret", "Exception");
    }

    @Test
    void theErrorControllerIsThisOne() {
        assertThat(context.getBeansOfType(org.springframework.boot.webmvc.error.ErrorController.class).values())
                .singleElement().isInstanceOf(ProblemErrorController.class);
    }

    @Test
    void theHostHasThisValveAndNoHtmlOne() {
        var host = ((TomcatWebServer) context.getWebServer()).getTomcat().getHost();

        assertThat(Arrays.stream(host.getPipeline().getValves()).filter(v -> v instanceof ErrorReportValve))
                .singleElement().isInstanceOf(ProblemErrorReportValve.class);
    }

    record Reply(int status, Map<String, String> headers, String body) {
    }

    /** Raw HTTP/1.1 over a socket: java.net.http refuses to send a malformed request target. */
    private Reply send(String requestLine, String extraHeaders) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write((requestLine + "\r\nHost: localhost\r\n" + extraHeaders
                    + "Connection: close\r\n\r\n").getBytes(ISO_8859_1));
            InputStream in = socket.getInputStream();
            int status = Integer.parseInt(readLine(in).split(" ")[1]);
            Map<String, String> headers = new LinkedHashMap<>();
            for (String line = readLine(in); !line.isEmpty(); line = readLine(in)) {
                int colon = line.indexOf(':');
                headers.put(line.substring(0, colon).trim().toLowerCase(Locale.ROOT), line.substring(colon + 1).trim());
            }
            if (!"chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
                return new Reply(status, headers, new String(in.readAllBytes(), ISO_8859_1));
            }
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            for (int size = Integer.parseInt(readLine(in), 16); size > 0; size = Integer.parseInt(readLine(in), 16)) {
                body.write(in.readNBytes(size));
                readLine(in);
            }
            return new Reply(status, headers, body.toString(ISO_8859_1));
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
