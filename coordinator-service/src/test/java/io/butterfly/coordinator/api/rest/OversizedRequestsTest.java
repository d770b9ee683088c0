package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import io.butterfly.common.model.generate.TokenizerGenerator;
import io.butterfly.common.web.limits.RequestLimitsAutoConfiguration;
import io.butterfly.coordinator.api.openai.ChatCompletionsController;
import io.butterfly.coordinator.api.openai.CompletionsController;
import io.butterfly.coordinator.api.openai.OpenAiErrors;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.ScriptedCluster;
import io.butterfly.coordinator.jinja.JinjavaChatTemplates;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.time.Clock;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.http.MediaType;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.test.web.servlet.MockMvc;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Issue 47, item 2, as the coordinator runs it (Spring MVC with the services' request limits at their defaults: the
 * body filter, the JSON parser's constraints, the strict request JSON, the controllers and problem handlers): what
 * was read whole into the heap, or failed in the template engine, is refused 413 naming the field, as a problem
 * document on {@code /api} and with OpenAI's error object on {@code /v1}. Observed before: a 60 M-element
 * {@code token_ids} and 90 M-character prompts ended in OutOfMemoryError 500s, a 5 MB chat message and 20 000
 * messages in 500 {@code server_error}.
 */
@WebMvcTest(controllers = {InferenceController.class, CompletionsController.class, ChatCompletionsController.class})
@ImportAutoConfiguration(RequestLimitsAutoConfiguration.class)
@Import({StrictRequestJson.class, OpenAiErrors.class, OversizedRequestsTest.Served.class})
class OversizedRequestsTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @TestConfiguration
    static class Served {
        @Bean(destroyMethod = "close")
        ScriptedCluster cluster() throws IOException {
            return new ScriptedCluster(Files.createTempDirectory("oversized-requests"));
        }

        @Bean
        InferenceService inference(ScriptedCluster cluster) {
            return cluster.service(ScriptedCluster.following(new long[]{5}), new JinjavaChatTemplates(Clock.systemUTC())
                    .compile(TokenizerGenerator.CHAT_TEMPLATE, "<s>", "</s>"));
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

    @Test
    void aPromptOfMillionsOfCharactersIsRefusedBeforeItIsRead() throws Exception {
        String body = "{\"prompt\": \"" + "x".repeat(3_000_000) + "\", \"max_tokens\": 1}";
        for (String path : new String[] {"/api/v1/inference", "/api/v1/inference/stream", "/v1/completions"}) {
            JsonNode problem = refused(path, body, "body");
            assertThat(problem.path("detail").asString()).contains("over the limit of 2097152 bytes");
        }
    }

    @Test
    void aFiveMegabyteChatMessageIsRefusedBeforeItIsRead() throws Exception {
        refused("/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"" + "m".repeat(5_000_000)
                + "\"}]}", "body");
    }

    @Test
    void tokenIdsPastTheParsersLimitAreRefusedNamingTheArray() throws Exception {
        String ids = "1" + ",2".repeat(250_000);
        JsonNode problem = refused("/api/v1/inference", "{\"token_ids\": [" + ids + "]}", "token_ids");
        assertThat(problem.path("detail").asString()).contains("butterfly.http.max-json-tokens");
        refused("/v1/completions", "{\"prompt\": [" + ids + "]}", "prompt");
    }

    @Test
    void aStringPastTheParsersLimitIsRefusedNamingIt() throws Exception {
        String longText = "y".repeat(1_100_000);
        JsonNode problem = refused("/api/v1/inference", "{\"prompt\": \"" + longText + "\"}", "prompt");
        assertThat(problem.path("detail").asString()).contains("1048576", "butterfly.http.max-json-string-chars");
        refused("/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"" + longText + "\"}]}",
                "messages"); // read as a tree: the field the tree is in
    }

    @Test
    void jsonNestedPastTheLimitIsRefused() throws Exception {
        refused("/v1/chat/completions", "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"response_format\": "
                + "{\"a\":".repeat(40) + "1" + "}".repeat(40) + "}", "response_format");
    }

    private JsonNode refused(String path, String body, String field) throws Exception {
        MockHttpServletResponse r = AsyncMvc.perform(mvc, post(path).contentType(MediaType.APPLICATION_JSON)
                .content(body.getBytes(StandardCharsets.UTF_8)));
        String text = r.getContentAsString(StandardCharsets.UTF_8);
        assertThat(r.getStatus()).as("%s answered %s", path, text).isEqualTo(413);
        assertThat(r.getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
        JsonNode problem = JSON.readTree(text);
        assertThat(problem.path("status").asInt()).isEqualTo(413);
        assertThat(problem.path("field").asString()).as(text).isEqualTo(field);
        JsonNode error = problem.path("error");
        if (path.startsWith("/v1/")) {
            assertThat(error.path("message").asString()).isEqualTo(problem.path("detail").asString());
            assertThat(error.path("type").asString()).isEqualTo("invalid_request_error");
            assertThat(error.path("param").asString()).isEqualTo(field);
        } else {
            assertThat(error.isMissingNode()).as("OpenAI's error object only under /v1/").isTrue();
        }
        return problem;
    }
}
