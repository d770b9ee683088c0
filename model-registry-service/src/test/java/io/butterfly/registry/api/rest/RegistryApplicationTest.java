package io.butterfly.registry.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.content;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.jsonPath;
import static org.springframework.test.web.servlet.result.MockMvcResultMatchers.status;

import io.butterfly.testsupport.ModelFixtures;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.webmvc.test.autoconfigure.AutoConfigureMockMvc;
import org.springframework.http.MediaType;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.test.web.servlet.MockMvc;

/** The whole service: background import at start-up, REST views and problem responses. */
@SpringBootTest(properties = {"spring.grpc.server.port=0", "butterfly.tls.enabled=false"})
@AutoConfigureMockMvc
class RegistryApplicationTest {

    static final Path WORK;

    static {
        try {
            WORK = Files.createTempDirectory("registry-app-test");
            ModelFixtures.write(ModelFixtures.tinyLlama(false), 9, WORK.resolve("models/app-tiny"));
            ModelFixtures.write(ModelFixtures.tinyGpt2(), 10, WORK.resolve("models/posted"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @DynamicPropertySource
    static void props(DynamicPropertyRegistry r) {
        r.add("butterfly.registry.store-dir", () -> WORK.resolve("store").toString());
        r.add("butterfly.registry.import-dirs", () -> WORK.resolve("models/app-tiny").toString());
        r.add("butterfly.registry.import-roots", () -> WORK.resolve("models").toString());
    }

    @Autowired
    MockMvc mvc;

    /** The key the registry created in its store and signs with. */
    private static String publisherKey() {
        return io.butterfly.common.crypto.NodeIdentity.loadOrCreate(
                WORK.resolve("store/publisher")).publicKeyHex();
    }

    @Test
    void importsAtStartUpAndServesManifestsAndProblems() throws Exception {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (mvc.perform(get("/api/v1/models/app-tiny")).andReturn().getResponse().getStatus() != 200) {
            assertThat(System.nanoTime()).as("imported in time").isLessThan(deadline);
            Thread.sleep(100);
        }
        mvc.perform(get("/api/v1/models/app-tiny"))
                .andExpect(status().isOk())
                .andExpect(jsonPath("$.model_id").value("app-tiny"))
                .andExpect(jsonPath("$.merkle_root").isString())
                .andExpect(jsonPath("$.signature").value(org.hamcrest.Matchers.matchesPattern("[0-9a-f]{128}")))
                .andExpect(jsonPath("$.publisher_key").value(publisherKey()))
                .andExpect(jsonPath("$.num_layers").value(3))
                .andExpect(jsonPath("$.files[3].name").value("tokenizer_config.json"))
                .andExpect(jsonPath("$.files[3].kind").value("TOKENIZER_CONFIG"))
                .andExpect(jsonPath("$.files[5].name").value("layer-00000.safetensors"))
                .andExpect(jsonPath("$.files[5].layer_start").value(0))
                .andExpect(jsonPath("$.files[5].size_bytes").isNumber());
        mvc.perform(get("/api/v1/models"))
                .andExpect(status().isOk())
                .andExpect(jsonPath("$[0].model_id").value("app-tiny"));
        mvc.perform(get("/api/v1/models/unknown"))
                .andExpect(status().isNotFound())
                .andExpect(content().contentTypeCompatibleWith(MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(jsonPath("$.code").value("MANIFEST_NOT_FOUND"));
        mvc.perform(post("/api/v1/models").contentType(MediaType.APPLICATION_JSON)
                        .content("{\"path\": \"" + WORK.resolve("models/nothing-here") + "\"}"))
                .andExpect(status().isBadRequest())
                .andExpect(content().contentTypeCompatibleWith(MediaType.APPLICATION_PROBLEM_JSON))
                .andExpect(jsonPath("$.field").value("path"));
        mvc.perform(post("/api/v1/models").contentType(MediaType.APPLICATION_JSON).content("{}"))
                .andExpect(status().isBadRequest())
                .andExpect(jsonPath("$.field").value("path"));
        for (String[] bad : new String[][]{{"{\"path\": {}}", "path"}, {"{\"path\": ", "body"}, {"[]", "body"}}) {
            mvc.perform(post("/api/v1/models").contentType(MediaType.APPLICATION_JSON).content(bad[0]))
                    .andExpect(status().isBadRequest())
                    .andExpect(content().contentTypeCompatibleWith(MediaType.APPLICATION_PROBLEM_JSON))
                    .andExpect(jsonPath("$.field").value(bad[1]));
        }
        mvc.perform(post("/api/v1/models").contentType(MediaType.TEXT_PLAIN).content("x"))
                .andExpect(status().isUnsupportedMediaType())
                .andExpect(content().contentTypeCompatibleWith(MediaType.APPLICATION_PROBLEM_JSON));
        mvc.perform(post("/api/v1/models").contentType(MediaType.APPLICATION_JSON)
                        .content("{\"path\": \"" + WORK.resolve("models/posted") + "\", \"model_id\": \"gpt2-posted\"}"))
                .andExpect(status().isCreated())
                .andExpect(jsonPath("$.model_id").value("gpt2-posted"))
                .andExpect(jsonPath("$.architecture").value("gpt2"));
        mvc.perform(get("/actuator/health/liveness")).andExpect(status().isOk());
    }
}
