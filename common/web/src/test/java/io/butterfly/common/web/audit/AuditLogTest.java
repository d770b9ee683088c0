package io.butterfly.common.web.audit;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.butterfly.common.web.auth.ApiKeySecurity;
import io.butterfly.common.web.auth.ApiKeys;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.annotation.Bean;
import org.springframework.http.HttpMethod;
import org.springframework.security.authentication.AuthenticationManager;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Issue 47, item 11: admin actions and key use are structured lines of their own logger ({@value AuditLog#LOGGER}),
 * through the real API-key filter chain on an embedded Tomcat: a drain names its target, outcome and the admin key's
 * id; an admin key's use is logged at INFO, a user key's at DEBUG; a refused key (none, wrong, a user key where an
 * admin key is needed) at WARN; no line holds a key itself. Before, nothing recorded who drained a worker.
 */
@SpringBootTest(classes = AuditLogTest.App.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "spring.mvc.problemdetails.enabled=true")
class AuditLogTest {

    static final String USER_KEY = "sk-user-audit-7f3a";
    static final String ADMIN_KEY = "sk-admin-audit-91bc";

    @SpringBootConfiguration
    @EnableAutoConfiguration
    static class App {
        @Bean
        Nodes nodes() {
            return new Nodes();
        }

        @Bean
        ApiKeys apiKeys() throws IOException {
            Path dir = Files.createTempDirectory("audit-keys");
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
                    .anyRequest().hasRole(ApiKeySecurity.ADMIN), (request, problem) -> { });
        }
    }

    /** As the coordinator's drain records itself. */
    @RestController
    static class Nodes {
        @PostMapping("/api/v1/nodes/{id}/drain")
        String drain(@PathVariable("id") String id) {
            AuditLog.action("drain", id, "accepted", "epoch 3");
            return "{}";
        }

        @PostMapping("/v1/completions")
        String complete() {
            return "{}";
        }
    }

    @LocalServerPort
    int port;

    private final ListAppender<ILoggingEvent> lines = new ListAppender<>();
    private final Logger audit = (Logger) LoggerFactory.getLogger(AuditLog.LOGGER);
    private final HttpClient http = HttpClient.newHttpClient();

    @BeforeEach
    void listen() {
        lines.start();
        audit.addAppender(lines);
        audit.setLevel(Level.DEBUG);
    }

    @AfterEach
    void stop() {
        audit.detachAppender(lines);
    }

    @Test
    void aDrainIsRecordedWithItsTargetOutcomeAndTheAdminKeysId() throws Exception {
        assertThat(post("/api/v1/nodes/worker-0/drain", ADMIN_KEY).statusCode()).isEqualTo(200);

        ILoggingEvent used = only("api_key_used");
        assertThat(used.getLevel()).isEqualTo(Level.INFO);
        Map<String, String> fields = fields(used);
        assertThat(fields).containsEntry("role", "admin").containsEntry("method", "POST")
                .containsEntry("path", "/api/v1/nodes/worker-0/drain");
        String keyId = fields.get("key_id");
        assertThat(keyId).hasSize(16);
        Map<String, String> action = fields(only("admin_action"));
        assertThat(action).containsEntry("action", "drain").containsEntry("target", "worker-0")
                .containsEntry("outcome", "accepted").containsEntry("key_id", keyId);
        assertNoKeyIsWritten();
    }

    @Test
    void refusedKeysAreWarnedOfAndAUserKeysUseIsADebugLine() throws Exception {
        assertThat(post("/api/v1/nodes/worker-0/drain", null).statusCode()).isEqualTo(401);
        assertThat(post("/api/v1/nodes/worker-0/drain", "sk-guess").statusCode()).isEqualTo(401);
        assertThat(post("/api/v1/nodes/worker-0/drain", USER_KEY).statusCode()).isEqualTo(403);
        assertThat(post("/v1/completions", USER_KEY).statusCode()).isEqualTo(200);

        List<ILoggingEvent> refused = of("api_key_refused");
        assertThat(refused).hasSize(3).allMatch(e -> e.getLevel() == Level.WARN);
        assertThat(refused).extracting(e -> fields(e).get("reason"))
                .containsExactly("no key", "not one of the keys", "an admin key is needed");
        assertThat(fields(refused.get(2))).containsEntry("role", "user").containsKey("key_id");
        assertThat(of("api_key_used")).extracting(ILoggingEvent::getLevel).containsOnly(Level.DEBUG);
        assertThat(of("admin_action")).as("the refused drains did not run").isEmpty();
        assertNoKeyIsWritten();
    }

    private void assertNoKeyIsWritten() {
        for (ILoggingEvent e : lines.list) {
            String all = e.getFormattedMessage() + " " + e.getKeyValuePairs();
            assertThat(all).doesNotContain(USER_KEY, ADMIN_KEY, "sk-guess");
        }
    }

    private List<ILoggingEvent> of(String event) {
        return lines.list.stream().filter(e -> event.equals(fields(e).get("event"))).toList();
    }

    private ILoggingEvent only(String event) {
        List<ILoggingEvent> found = of(event);
        assertThat(found).as(event).hasSize(1);
        return found.get(0);
    }

    private static Map<String, String> fields(ILoggingEvent e) {
        return e.getKeyValuePairs() == null ? Map.of() : e.getKeyValuePairs().stream()
                .collect(Collectors.toMap(kv -> kv.key, kv -> String.valueOf(kv.value), (a, b) -> b));
    }

    private HttpResponse<String> post(String path, String key) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .POST(HttpRequest.BodyPublishers.noBody());
        if (key != null) {
            request.header("Authorization", "Bearer " + key);
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }
}
