package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import io.butterfly.coordinator.api.openai.CompletionsController;
import io.butterfly.coordinator.api.openai.OpenAiErrors;
import io.butterfly.coordinator.api.security.ApiKeyConfiguration;
import io.butterfly.coordinator.config.ApiKeysProperties;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.ScriptedCluster;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
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
import org.springframework.http.MediaType;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;
import org.springframework.test.web.servlet.RequestBuilder;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 47, item 3: with API keys set, a task is its starting key's. Through the coordinator's real security chain
 * (Spring Security with its key rules), controllers and inference service: {@code GET /api/v1/tasks} needs a key and
 * lists only the key's own tasks (an admin key's: all), another key's task is 404 by id, a stream is taken over with
 * {@code Last-Event-ID} only with its owner's key (or an admin's), an {@code Idempotency-Key} names only the sending
 * key's tasks, and an unknown {@code Last-Event-ID} is 404. Observed before: one user's key listed another's tokens
 * and took over her running stream (hers stopped after 13 tokens); {@code nope:0} was answered 200 by a new task.
 */
@WebMvcTest(controllers = {InferenceController.class, CompletionsController.class, TasksController.class})
@ImportAutoConfiguration({SecurityAutoConfiguration.class, ServletWebSecurityAutoConfiguration.class,
        SecurityFilterAutoConfiguration.class})
@Import({ApiKeyConfiguration.class, StrictRequestJson.class, OpenAiErrors.class, TaskOwnershipTest.Served.class})
class TaskOwnershipTest {

    private static final String ALICE = "sk-alice-0123456789";
    private static final String BOB = "sk-bob-0123456789";
    private static final String ADMIN = "sk-admin-0123456789";
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final String REQUEST = "{\"token_ids\": [1, 17, 4], \"max_tokens\": 6}";

    @DynamicPropertySource
    static void keys(DynamicPropertyRegistry registry) {
        try {
            Path dir = Files.createTempDirectory("task-ownership");
            registry.add("butterfly.coordinator.api-keys.file",
                    () -> write(dir.resolve("keys.txt"), ALICE + "\n" + BOB + "\n").toString());
            registry.add("butterfly.coordinator.api-keys.admin-file",
                    () -> write(dir.resolve("admin-keys.txt"), ADMIN + "\n").toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path write(Path file, String text) {
        try {
            return Files.writeString(file, text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @TestConfiguration
    @EnableConfigurationProperties(ApiKeysProperties.class)
    static class Served {
        @Bean(destroyMethod = "close")
        ScriptedCluster cluster() throws IOException {
            return new ScriptedCluster(Files.createTempDirectory("task-ownership-cluster"));
        }

        @Bean
        InferenceService inference(ScriptedCluster cluster) {
            return cluster.service(ScriptedCluster.following(new long[]{5, 9, 11, 13, 15, 17}));
        }

        @Bean
        ControlLog control(ScriptedCluster cluster) {
            return cluster.control();
        }

        @Bean
        CoordinatorProperties props() {
            return ReadyCluster.props("coordinator-0");
        }

        @Bean
        InferenceStreams streams(InferenceService inference, CoordinatorProperties props) {
            return new InferenceStreams(inference, props);
        }

        @Bean
        Clock clock() {
            return Clock.systemUTC();
        }
    }

    @Autowired
    MockMvc mvc;

    @Autowired
    ScriptedCluster cluster;

    @Test
    void aKeyListsOnlyItsOwnTasksAndAnAdminKeyAll() throws Exception {
        String alices = generate(ALICE);
        String bobs = generate(BOB);

        assertThat(perform(get("/api/v1/tasks")).getStatus()).as("no key").isEqualTo(401);
        assertThat(taskIds(ALICE)).contains(alices).doesNotContain(bobs);
        assertThat(taskIds(BOB)).contains(bobs).doesNotContain(alices);
        assertThat(taskIds(ADMIN)).contains(alices, bobs);
    }

    @Test
    void anotherKeysTaskIsNotFound() throws Exception {
        String alices = generate(ALICE);
        cluster.recorded();

        MockHttpServletResponse asBob = perform(get("/api/v1/tasks/" + alices + "/state").header("Authorization", bearer(BOB)));
        assertThat(asBob.getStatus()).isEqualTo(404);
        assertThat(asBob.getContentAsString()).doesNotContain("token_ids");
        MockHttpServletResponse asAlice = perform(get("/api/v1/tasks/" + alices + "/state")
                .header("Authorization", bearer(ALICE)));
        assertThat(asAlice.getStatus()).isEqualTo(200);
        assertThat(JSON.readTree(asAlice.getContentAsString()).path("token_ids").size()).isEqualTo(6);
        assertThat(perform(get("/api/v1/tasks/" + alices + "/state").header("Authorization", bearer(ADMIN))).getStatus())
                .isEqualTo(200);
    }

    @Test
    void aStreamIsPickedUpWithLastEventIdOnlyWithItsOwnersKey() throws Exception {
        List<String> ids = eventIds(perform(stream(ALICE, null)));
        assertThat(ids).hasSize(6);
        String second = ids.get(1);

        MockHttpServletResponse bob = perform(stream(BOB, second));
        assertThat(bob.getStatus()).isEqualTo(404);
        JsonNode problem = JSON.readTree(bob.getContentAsString());
        assertThat(problem.path("field").asString()).isEqualTo("Last-Event-ID");

        assertThat(eventIds(perform(stream(ALICE, second)))).as("the rest, to its owner").isEqualTo(ids.subList(2, 6));
        assertThat(eventIds(perform(stream(ADMIN, second)))).as("and to an admin key").isEqualTo(ids.subList(2, 6));
    }

    @Test
    void anUnknownLastEventIdIsNotFound() throws Exception {
        MockHttpServletResponse r = perform(stream(ALICE, "nope:0"));

        assertThat(r.getStatus()).isEqualTo(404);
        assertThat(JSON.readTree(r.getContentAsString()).path("field").asString()).isEqualTo("Last-Event-ID");
        assertThat(r.getContentAsString()).doesNotContain("event:token");
    }

    @Test
    void anIdempotencyKeyNamesOnlyTheSendingKeysTasks() throws Exception {
        String alices = generate(ALICE, "order-1");
        assertThat(generate(ALICE, "order-1")).as("a repeat: the same task").isEqualTo(alices);
        String bobs = generate(BOB, "order-1");
        assertThat(bobs).as("another key's Idempotency-Key: its own task").isNotEqualTo(alices);
        cluster.recorded();

        JsonNode task = JSON.readTree(perform(get("/api/v1/tasks/" + bobs + "/state").header("Authorization", bearer(BOB)))
                .getContentAsString());
        assertThat(task.path("idempotency_key").asString()).as("as its client sent it").isEqualTo("order-1");
    }

    private String generate(String key) throws Exception {
        return generate(key, null);
    }

    private String generate(String key, String idempotencyKey) throws Exception {
        var request = post("/api/v1/inference").contentType(MediaType.APPLICATION_JSON).content(REQUEST)
                .header("Authorization", bearer(key));
        if (idempotencyKey != null) {
            request.header("Idempotency-Key", idempotencyKey);
        }
        MockHttpServletResponse r = perform(request);
        assertThat(r.getStatus()).as(r.getContentAsString()).isEqualTo(200);
        return JSON.readTree(r.getContentAsString()).path("task_id").asString();
    }

    private Set<String> taskIds(String key) throws Exception {
        cluster.recorded(); // the journal commits task events in groups, a few milliseconds after the answer
        MockHttpServletResponse r = perform(get("/api/v1/tasks").header("Authorization", bearer(key)));
        assertThat(r.getStatus()).isEqualTo(200);
        Set<String> ids = new java.util.HashSet<>();
        JSON.readTree(r.getContentAsString()).forEach(t -> ids.add(t.path("task_id").asString()));
        return ids;
    }

    private static RequestBuilder stream(String key, String lastEventId) {
        var request = post("/api/v1/inference/stream").contentType(MediaType.APPLICATION_JSON).content(REQUEST)
                .header("Authorization", bearer(key));
        if (lastEventId != null) {
            request.header("Last-Event-ID", lastEventId);
        }
        return request;
    }

    private static List<String> eventIds(MockHttpServletResponse r) throws Exception {
        String text = r.getContentAsString(StandardCharsets.UTF_8);
        assertThat(r.getStatus()).as(text).isEqualTo(200);
        List<String> ids = new ArrayList<>();
        for (String block : text.split("\n\n")) {
            List<String> lines = Arrays.asList(block.split("\n"));
            if (lines.contains("event:token")) {
                ids.add(lines.stream().filter(l -> l.startsWith("id:")).map(l -> l.substring(3)).collect(Collectors.joining()));
            }
        }
        return ids;
    }

    private MockHttpServletResponse perform(RequestBuilder request) throws Exception {
        return AsyncMvc.perform(mvc, request);
    }

    private static String bearer(String key) {
        return "Bearer " + key;
    }
}
