package io.butterfly.common.web.csrf;

import static java.nio.charset.StandardCharsets.ISO_8859_1;
import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.web.auth.ApiKeySecurity;
import io.butterfly.common.web.auth.ApiKeys;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpStatus;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 47, item 6: a real embedded Tomcat with the services' auto-configuration refuses the state-changing requests
 * a page of another site can make a browser send, before they reach a controller. Observed before: a cross-site form
 * POST to {@code /api/v1/nodes/{id}/drain} drained a worker (202). A drain without a body and without {@code Origin}
 * (curl, the CLI) still drains; so does one from the server's own origin (the dashboard) or an allowed one.
 */
@SpringBootTest(classes = CrossSiteRequestsTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"spring.mvc.problemdetails.enabled=true",
                "butterfly.http.allowed-origins=https://console.example.com"})
class CrossSiteRequestsTest {

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {
        @Bean
        Nodes nodes() {
            return new Nodes();
        }

        @Bean
        SecurityFilterChain open(HttpSecurity http) {
            return ApiKeySecurity.chain(http, ApiKeys.NONE, ApiKeySecurity.checker(ApiKeys.NONE), rules -> { },
                    (request, problem) -> { });
        }
    }

    /** Like the coordinator's drain: a POST without a body. */
    @RestController
    static class Nodes {
        final AtomicInteger drains = new AtomicInteger();

        @PostMapping("/api/v1/nodes/{id}/drain")
        @ResponseStatus(HttpStatus.ACCEPTED)
        void drain(@PathVariable("id") String id) {
            drains.incrementAndGet();
        }

        @GetMapping("/api/v1/nodes")
        String nodes() {
            return "[]";
        }
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String DRAIN = "POST /api/v1/nodes/worker-0/drain HTTP/1.1";

    @LocalServerPort
    int port;

    @Autowired
    Nodes nodes;

    @BeforeEach
    void reset() {
        nodes.drains.set(0);
    }

    @Test
    void aCrossSiteFormPostDrainsNothing() throws IOException {
        Reply reply = send(DRAIN, "Origin: https://evil.example\r\nContent-Type: application/x-www-form-urlencoded\r\n",
                "x=1");

        assertThat(reply.status).isEqualTo(415);
        assertThat(reply.contentType).isEqualTo("application/problem+json");
        assertThat(JSON.readTree(reply.body).path("detail").asString()).contains("application/x-www-form-urlencoded");
        assertThat(nodes.drains.get()).isZero();
    }

    @Test
    void aSimpleCrossOriginRequestOfAnyFormTypeOrWithoutABodyDrainsNothing() throws IOException {
        assertThat(send(DRAIN, "Content-Type: text/plain\r\n", "x").status).as("text/plain, no Origin").isEqualTo(415);
        assertThat(send(DRAIN, "Content-Type: multipart/form-data; boundary=b\r\n", "--b--\r\n").status)
                .as("multipart").isEqualTo(415);
        Reply noBody = send(DRAIN, "Origin: https://evil.example\r\n", "");
        assertThat(noBody.status).as("fetch(url, {method: 'POST', mode: 'no-cors'})").isEqualTo(403);
        assertThat(JSON.readTree(noBody.body).path("detail").asString()).contains("https://evil.example",
                "butterfly.http.allowed-origins");
        assertThat(send(DRAIN, "Sec-Fetch-Site: cross-site\r\n", "").status).isEqualTo(403);
        assertThat(send(DRAIN, "Origin: null\r\n", "").status).as("a sandboxed page's opaque origin").isEqualTo(403);
        assertThat(nodes.drains.get()).isZero();
    }

    @Test
    void clientsThatAreNotBrowsersAndTheServersOwnPagesStillDrain() throws IOException {
        assertThat(send(DRAIN, "", "").status).as("curl -X POST").isEqualTo(202);
        assertThat(send(DRAIN, "Content-Type: application/json\r\n", "{}").status).as("JSON").isEqualTo(202);
        assertThat(send(DRAIN, "Origin: http://localhost:" + port + "\r\nSec-Fetch-Site: same-origin\r\n", "").status)
                .as("the dashboard, from the server's own origin").isEqualTo(202);
        assertThat(send(DRAIN, "Origin: https://console.example.com\r\n", "").status).as("an allowed origin")
                .isEqualTo(202);
        assertThat(nodes.drains.get()).isEqualTo(4);
    }

    @Test
    void readsAreNotRefused() throws IOException {
        assertThat(send("GET /api/v1/nodes HTTP/1.1", "Origin: https://evil.example\r\n", "").status).isEqualTo(200);
    }

    record Reply(int status, String contentType, String body) {
    }

    private Reply send(String requestLine, String headers, String body) throws IOException {
        byte[] bytes = body.getBytes(UTF_8);
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write((requestLine + "\r\nHost: localhost:" + port + "\r\n" + headers
                    + "Content-Length: " + bytes.length + "\r\nConnection: close\r\n\r\n").getBytes(ISO_8859_1));
            socket.getOutputStream().write(bytes);
            InputStream in = socket.getInputStream();
            String response = new String(in.readAllBytes(), UTF_8);
            int status = Integer.parseInt(response.split(" ", 3)[1]);
            String contentType = null;
            for (String line : response.substring(0, response.indexOf("\r\n\r\n")).split("\r\n")) {
                if (line.toLowerCase().startsWith("content-type:")) {
                    contentType = line.substring("content-type:".length()).strip();
                }
            }
            String rest = response.substring(response.indexOf("\r\n\r\n") + 4);
            return new Reply(status, contentType, dechunk(rest, response.toLowerCase().contains("transfer-encoding: chunked")));
        }
    }

    private static String dechunk(String body, boolean chunked) {
        if (!chunked) {
            return body;
        }
        StringBuilder out = new StringBuilder();
        int at = 0;
        while (true) {
            int eol = body.indexOf("\r\n", at);
            int size = Integer.parseInt(body.substring(at, eol).strip(), 16);
            if (size == 0) {
                return out.toString();
            }
            out.append(body, eol + 2, eol + 2 + size);
            at = eol + 2 + size + 2;
        }
    }
}
