package io.butterfly.common.web.auth;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpMethod;
import org.springframework.security.authentication.AuthenticationManager;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The API-key filter chain on a real embedded Tomcat with Spring Security, under rules shaped like the coordinator's:
 * 401 without a key or with a wrong one (problem+json, {@code WWW-Authenticate: Bearer}), 403 for a user key where
 * an admin key is needed, reads open, and the async and error dispatches of an authorized request let through.
 */
@SpringBootTest(classes = ApiKeySecurityTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "spring.mvc.problemdetails.enabled=true")
class ApiKeySecurityTest {

    static final String USER_KEY = "sk-user-7f3a";
    static final String ADMIN_KEY = "sk-admin-91bc";

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {
        @Bean
        Endpoints endpoints() {
            return new Endpoints();
        }

        @Bean
        ApiKeys apiKeys() throws IOException {
            Path dir = Files.createTempDirectory("api-keys");
            return ApiKeys.load(Files.writeString(dir.resolve("keys"), USER_KEY + "\n"),
                    Files.writeString(dir.resolve("admin-keys"), ADMIN_KEY + "\n"));
        }

        @Bean
        AuthenticationManager apiKeyChecker(ApiKeys keys) {
            return ApiKeySecurity.checker(keys);
        }

        @Bean
        SecurityFilterChain chain(HttpSecurity http, ApiKeys keys, AuthenticationManager checker) {
            return ApiKeySecurity.chain(http, keys, checker, rules -> rules
                    .requestMatchers("/v1/**").hasRole(ApiKeySecurity.USER)
                    .requestMatchers(HttpMethod.GET, "/**").permitAll()
                    .anyRequest().hasRole(ApiKeySecurity.ADMIN),
                    (request, problem) -> problem.setProperty("seen_by", "service"));
        }
    }

    @RestController
    static class Endpoints {
        @GetMapping("/api/v1/state")
        String state() {
            return "{}";
        }

        @PostMapping("/v1/generate")
        CompletableFuture<String> generate() { // answered on an async dispatch
            return CompletableFuture.supplyAsync(() -> "generated");
        }

        @PostMapping("/api/v1/nodes/w1/drain")
        String drain() {
            return "drained";
        }
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final HttpClient http = HttpClient.newHttpClient();

    @LocalServerPort
    int port;

    @Test
    void generatingNeedsAKey() {
        HttpResponse<String> none = post("/v1/generate", null);
        assertThat(none.statusCode()).isEqualTo(401);
        assertThat(none.headers().firstValue("WWW-Authenticate")).hasValue("Bearer");
        assertThat(none.headers().firstValue("Content-Type")).hasValue("application/problem+json");
        JsonNode problem = JSON.readTree(none.body());
        assertThat(problem.path("status").asInt()).isEqualTo(401);
        assertThat(problem.path("detail").asString()).contains("needs an API key");
        assertThat(problem.path("instance").asString()).isEqualTo("/v1/generate");
        assertThat(problem.path("seen_by").asString()).isEqualTo("service");

        HttpResponse<String> wrong = post("/v1/generate", "Bearer " + USER_KEY + "x");
        assertThat(wrong.statusCode()).isEqualTo(401);
        assertThat(JSON.readTree(wrong.body()).path("detail").asString()).isEqualTo("The API key is not valid");
        assertThat(post("/v1/generate", "Basic " + USER_KEY).statusCode()).as("not a bearer key").isEqualTo(401);

        HttpResponse<String> user = post("/v1/generate", "Bearer " + USER_KEY);
        assertThat(user.statusCode()).isEqualTo(200);
        assertThat(user.body()).isEqualTo("generated");
        assertThat(post("/v1/generate", "bearer " + ADMIN_KEY).statusCode()).as("an admin key may generate")
                .isEqualTo(200);
    }

    @Test
    void changingTheClusterNeedsAnAdminKey() {
        HttpResponse<String> user = post("/api/v1/nodes/w1/drain", "Bearer " + USER_KEY);
        assertThat(user.statusCode()).isEqualTo(403);
        assertThat(JSON.readTree(user.body()).path("detail").asString()).contains("admin API key");
        assertThat(post("/api/v1/nodes/w1/drain", null).statusCode()).isEqualTo(401);
        assertThat(post("/api/v1/nodes/w1/drain", "Bearer " + ADMIN_KEY).body()).isEqualTo("drained");
    }

    @Test
    void readsStayOpenAndErrorsOfAuthorizedRequestsAreTheirOwn() {
        assertThat(get("/api/v1/state").statusCode()).isEqualTo(200);
        HttpResponse<String> unknown = post("/v1/unknown", "Bearer " + USER_KEY);
        assertThat(unknown.statusCode()).as("the error dispatch is not refused anew").isEqualTo(404);
    }

    private HttpResponse<String> post(String path, String authorization) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .POST(HttpRequest.BodyPublishers.noBody());
        if (authorization != null) {
            b.header("Authorization", authorization);
        }
        return send(b.build());
    }

    private HttpResponse<String> get(String path) {
        return send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).GET().build());
    }

    private HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
