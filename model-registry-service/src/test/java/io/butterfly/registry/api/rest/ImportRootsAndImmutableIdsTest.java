package io.butterfly.registry.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.butterfly.common.web.audit.AuditLog;

import io.butterfly.registry.catalog.ModelCatalog;
import io.butterfly.testsupport.ModelFixtures;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.http.MediaType;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 47, item 7, on the real registry application: an import asked over the API reads only under
 * {@code butterfly.registry.import-roots}, and every path outside them gets the same answer whether or not anything
 * is there (before: its errors told existing directories from missing ones, and any path of the host was imported);
 * a model id is immutable once imported: another source under it is 409 naming it and changes nothing, so the
 * weights a cluster serves under the id stay the ones whose Merkle root it pinned (before: the re-import was 201,
 * and the next re-plan failed cross-validation and left the cluster DEGRADED). Each import, refused or not, is an
 * {@code admin_action} line of the audit log (issue 47 item 2) naming its target and outcome.
 */
@SpringBootTest(properties = {"spring.grpc.server.port=0", "butterfly.tls.enabled=false"})
@AutoConfigureMockMvc
class ImportRootsAndImmutableIdsTest {

    static final Path WORK;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    static {
        try {
            WORK = Files.createTempDirectory("import-roots-test");
            ModelFixtures.write(ModelFixtures.tinyLlama(false), 11, WORK.resolve("roots/llama"));
            ModelFixtures.write(ModelFixtures.tinyGpt2(), 12, WORK.resolve("roots/gpt2"));
            ModelFixtures.write(ModelFixtures.tinyGpt2(), 13, WORK.resolve("outside/gpt2"));
            Files.createSymbolicLink(WORK.resolve("roots/escape"), WORK.resolve("outside/gpt2"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @DynamicPropertySource
    static void props(DynamicPropertyRegistry r) {
        r.add("butterfly.registry.store-dir", () -> WORK.resolve("store").toString());
        r.add("butterfly.registry.import-roots", () -> WORK.resolve("roots").toString());
    }

    @Autowired
    MockMvc mvc;

    @Autowired
    ModelCatalog catalog;

    private final ListAppender<ILoggingEvent> audit = new ListAppender<>();

    @BeforeEach
    void listen() {
        audit.start();
        ((Logger) LoggerFactory.getLogger(AuditLog.LOGGER)).addAppender(audit);
    }

    @AfterEach
    void stop() {
        ((Logger) LoggerFactory.getLogger(AuditLog.LOGGER)).detachAppender(audit);
    }

    @Test
    void everyPathOutsideTheRootsGetsTheSameAnswerWhetherOrNotItExists() throws Exception {
        String[] outside = {WORK.resolve("outside/gpt2").toString(), WORK.resolve("outside/missing").toString(),
                "/etc", "/no/such/dir", WORK.resolve("roots/../outside/gpt2").toString(),
                WORK.resolve("roots/escape").toString()};
        String first = null;
        for (String path : outside) {
            MockHttpServletResponse r = importing(path, "m-" + Math.abs(path.hashCode()));
            assertThat(r.getStatus()).as(path).isEqualTo(403);
            JsonNode problem = JSON.readTree(r.getContentAsString());
            assertThat(problem.path("field").asString()).isEqualTo("path");
            assertThat(r.getContentAsString()).doesNotContain(path).doesNotContain("outside");
            if (first == null) {
                first = r.getContentAsString();
            }
            assertThat(r.getContentAsString()).as("the same answer for %s", path).isEqualTo(first);
        }
        assertThat(catalog.list()).noneMatch(m -> m.modelId().startsWith("m-"));
        assertThat(actions()).hasSize(outside.length).allSatisfy(a -> assertThat(a)
                .containsEntry("action", "import").containsEntry("outcome", "refused").containsEntry("key_id", "none"));
        assertThat(actions()).extracting(a -> a.get("target")).containsExactly(outside);
    }

    @Test
    void aModelIdIsImmutableOnceImported() throws Exception {
        MockHttpServletResponse imported = importing(WORK.resolve("roots/llama").toString(), "pinned");
        assertThat(imported.getStatus()).as(imported.getContentAsString()).isEqualTo(201);
        String root = JSON.readTree(imported.getContentAsString()).path("merkle_root").asString();

        MockHttpServletResponse again = importing(WORK.resolve("roots/gpt2").toString(), "pinned");
        assertThat(again.getStatus()).as(again.getContentAsString()).isEqualTo(409);
        JsonNode problem = JSON.readTree(again.getContentAsString());
        assertThat(problem.path("field").asString()).isEqualTo("model_id");
        assertThat(problem.path("model_id").asString()).isEqualTo("pinned");
        assertThat(problem.path("detail").asString()).contains("'pinned'", root, "new id");

        // Nothing changed: the served manifest is the one the cluster pinned, and no failure is recorded for the id
        // (a coordinator asking for it is not told the model failed).
        JsonNode served = JSON.readTree(mvc.perform(get("/api/v1/models/pinned")).andReturn().getResponse()
                .getContentAsString());
        assertThat(served.path("merkle_root").asString()).isEqualTo(root);
        assertThat(catalog.failures()).isEmpty();

        MockHttpServletResponse same = importing(WORK.resolve("roots/llama").toString(), "pinned");
        assertThat(same.getStatus()).as("the same unchanged source again").isEqualTo(201);
        assertThat(JSON.readTree(same.getContentAsString()).path("merkle_root").asString()).isEqualTo(root);

        assertThat(actions()).extracting(a -> a.get("target") + " " + a.get("outcome"))
                .containsExactly("pinned imported", "pinned refused", "pinned imported");
        assertThat(actions().get(0).get("detail")).contains(root);
    }

    /** The audit log's admin actions so far, each as its key-values. */
    private List<Map<String, String>> actions() {
        return audit.list.stream().map(e -> e.getKeyValuePairs().stream()
                        .collect(Collectors.toMap(kv -> kv.key, kv -> String.valueOf(kv.value), (a, b) -> b)))
                .filter(kv -> "admin_action".equals(kv.get("event"))).toList();
    }

    private MockHttpServletResponse importing(String path, String modelId) throws Exception {
        return mvc.perform(post("/api/v1/models").contentType(MediaType.APPLICATION_JSON)
                .content(JSON.writeValueAsString(java.util.Map.of("path", path, "model_id", modelId))))
                .andReturn().getResponse();
    }
}
