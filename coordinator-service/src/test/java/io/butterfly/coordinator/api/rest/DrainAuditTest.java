package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.butterfly.common.web.audit.AuditLog;
import io.butterfly.coordinator.api.openai.OpenAiErrors;
import io.butterfly.coordinator.api.security.ApiKeyConfiguration;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.cluster.NodeInfo;
import io.butterfly.coordinator.config.ApiKeysProperties;
import io.butterfly.coordinator.control.InMemoryControlLog;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.planning.CapacityWeightedPlanner;
import io.butterfly.coordinator.planning.ModelFootprints;
import io.butterfly.coordinator.reconcile.Drains;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Clock;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration;
import org.springframework.boot.security.autoconfigure.web.servlet.SecurityFilterAutoConfiguration;
import org.springframework.boot.security.autoconfigure.web.servlet.ServletWebSecurityAutoConfiguration;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;

/**
 * Issue 47, item 11: the coordinator's own drain endpoint writes the audit line. {@code POST
 * /api/v1/nodes/{id}/drain} through the coordinator's real API-key chain, its {@link DrainController} and a real
 * {@link Drains} over a control log that served READY: an admin key's drain of the spare is an {@code admin_action}
 * line naming the worker, {@code accepted} and the caller's key id (the one the key's own {@code api_key_used} line
 * names), a drain of an unknown worker the same with {@code refused}; a user key's drain (403) and a drain without a
 * key (401) drain nothing and write no action line. No line holds a key.
 */
@WebMvcTest(controllers = DrainController.class)
@ImportAutoConfiguration({SecurityAutoConfiguration.class, ServletWebSecurityAutoConfiguration.class,
        SecurityFilterAutoConfiguration.class})
@Import({ApiKeyConfiguration.class, OpenAiErrors.class, DrainAuditTest.Served.class})
class DrainAuditTest {

    private static final String USER = "sk-user-drain-4c1d9e";
    private static final String ADMIN = "sk-admin-drain-7b20f5";

    @DynamicPropertySource
    static void keys(DynamicPropertyRegistry registry) {
        try {
            Path dir = Files.createTempDirectory("drain-audit");
            Path keys = Files.writeString(dir.resolve("keys.txt"), USER + "\n");
            Path admin = Files.writeString(dir.resolve("admin-keys.txt"), ADMIN + "\n");
            registry.add("butterfly.coordinator.api-keys.file", keys::toString);
            registry.add("butterfly.coordinator.api-keys.admin-file", admin::toString);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @TestConfiguration
    @EnableConfigurationProperties(ApiKeysProperties.class)
    static class Served {
        @Bean
        InMemoryControlLog control() {
            InMemoryControlLog control = new InMemoryControlLog();
            ReadyCluster.bootstrap(control);
            control.submit(new ClusterCommand.NodeJoined(
                    new NodeInfo("w3", "worker", "host-w3", 9000, 8000, 4, 8L << 30, 12.5, "cpu"), 9));
            return control;
        }

        /**
         * The drains the coordinator makes, but without a model catalog: draining the spare (w3) holds no stage, so
         * nothing is re-planned before it is committed.
         */
        @Bean
        Drains drains(InMemoryControlLog control) {
            return new Drains(control, null, new ModelFootprints.Settings(64, 1, 1 << 20),
                    new CapacityWeightedPlanner(), Clock.systemUTC());
        }
    }

    @Autowired
    MockMvc mvc;

    @Autowired
    InMemoryControlLog control;

    private final ListAppender<ILoggingEvent> lines = new ListAppender<>();
    private final Logger audit = (Logger) LoggerFactory.getLogger(AuditLog.LOGGER);

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
    void aDrainOverRestIsAnAuditLineNamingTheCallerAndTheWorker() throws Exception {
        assertThat(drain("w3", ADMIN)).isEqualTo(202);
        assertThat(control.state().draining()).containsExactly("w3");

        String adminKeyId = keyId(ADMIN);
        assertThat(fields(only("api_key_used"))).containsEntry("key_id", adminKeyId).containsEntry("role", "admin")
                .containsEntry("path", "/api/v1/nodes/w3/drain");
        Map<String, String> action = fields(only("admin_action"));
        assertThat(action).containsEntry("action", "drain").containsEntry("target", "w3")
                .containsEntry("outcome", "accepted").containsEntry("key_id", adminKeyId);
        assertThat(action.get("detail")).isEqualTo("epoch 1");
        assertThat(only("admin_action").getLevel()).isEqualTo(Level.INFO);
        assertNoKeyIsWritten();
    }

    @Test
    void aRefusedDrainIsAuditedAndDrainsWithoutAnAdminKeyWriteNoAction() throws Exception {
        assertThat(drain("w9", ADMIN)).isEqualTo(404);
        Map<String, String> refused = fields(only("admin_action"));
        assertThat(refused).containsEntry("action", "drain").containsEntry("target", "w9")
                .containsEntry("outcome", "refused").containsEntry("key_id", keyId(ADMIN));
        assertThat(refused.get("detail")).contains("no worker 'w9'");

        lines.list.clear();
        assertThat(drain("w1", USER)).isEqualTo(403);
        assertThat(drain("w1", null)).isEqualTo(401);
        assertThat(of("admin_action")).as("no drain ran").isEmpty();
        assertThat(of("api_key_refused")).hasSize(2);
        assertThat(control.state().draining()).doesNotContain("w1");
        assertNoKeyIsWritten();
    }

    /** A key's id as the audit log names it: the first 8 bytes of its SHA-256, in hex. */
    private static String keyId(String key) throws Exception {
        byte[] digest = MessageDigest.getInstance("SHA-256").digest(key.getBytes(StandardCharsets.UTF_8));
        return HexFormat.of().formatHex(digest, 0, 8);
    }

    private int drain(String node, String key) throws Exception {
        var request = post("/api/v1/nodes/" + node + "/drain");
        if (key != null) {
            request.header("Authorization", "Bearer " + key);
        }
        return mvc.perform(request).andReturn().getResponse().getStatus();
    }

    private void assertNoKeyIsWritten() {
        for (ILoggingEvent e : lines.list) {
            assertThat(e.getFormattedMessage() + " " + e.getKeyValuePairs()).doesNotContain(USER, ADMIN);
        }
    }

    private List<ILoggingEvent> of(String event) {
        return lines.list.stream().filter(e -> event.equals(fields(e).get("event"))).toList();
    }

    private ILoggingEvent only(String event) {
        List<ILoggingEvent> found = of(event);
        assertThat(found).as(event + " in " + lines.list).hasSize(1);
        return found.get(0);
    }

    private static Map<String, String> fields(ILoggingEvent e) {
        return e.getKeyValuePairs() == null ? Map.of() : e.getKeyValuePairs().stream()
                .collect(Collectors.toMap(kv -> kv.key, kv -> String.valueOf(kv.value), (a, b) -> b));
    }
}
