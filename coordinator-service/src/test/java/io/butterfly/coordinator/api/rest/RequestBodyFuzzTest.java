package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.post;

import com.code_intelligence.jazzer.junit.FuzzTest;
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
import org.junit.jupiter.api.Timeout;

/**
 * The JSON bodies of {@code POST /api/v1/inference}, {@code /api/v1/inference/stream}, {@code /v1/completions} and
 * {@code /v1/chat/completions} (docs/testing.md, fuzzing), through Spring MVC as the coordinator runs it (the request
 * limits' filter and JSON constraints, its strict request JSON, the
 * controllers, the request validation, the problem handlers) over a READY cluster whose pipeline is scripted: any
 * body is answered 2xx, or 4xx with a problem document naming the field (and OpenAI's error object under
 * {@code /v1/}); never 5xx, never an exception escaping.
 */
// Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
@Timeout(30)
@WebMvcTest(controllers = {InferenceController.class, CompletionsController.class, ChatCompletionsController.class})
@ImportAutoConfiguration(RequestLimitsAutoConfiguration.class)
@Import({StrictRequestJson.class, OpenAiErrors.class, RequestBodyFuzzTest.Served.class})
class RequestBodyFuzzTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** A READY cluster of the tiny model (its ChatML template) whose last stage always makes token 5 likeliest. */
    @TestConfiguration
    static class Served {
        @Bean(destroyMethod = "close")
        ScriptedCluster cluster() throws IOException {
            return new ScriptedCluster(Files.createTempDirectory("request-body-fuzz"));
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

    @FuzzTest(maxDuration = "30s")
    void anyInferenceBodyIsAnsweredOrRefused(byte[] body) throws Exception {
        answeredOrRefused("/api/v1/inference", body);
    }

    @FuzzTest(maxDuration = "30s")
    void anyStreamedInferenceBodyIsAnsweredOrRefused(byte[] body) throws Exception {
        answeredOrRefused("/api/v1/inference/stream", body);
    }

    @FuzzTest(maxDuration = "30s")
    void anyCompletionBodyIsAnsweredOrRefused(byte[] body) throws Exception {
        answeredOrRefused("/v1/completions", body);
    }

    @FuzzTest(maxDuration = "30s")
    void anyChatBodyIsAnsweredOrRefused(byte[] body) throws Exception {
        answeredOrRefused("/v1/chat/completions", body);
    }

    private void answeredOrRefused(String path, byte[] body) throws Exception {
        MockHttpServletResponse r = AsyncMvc.perform(mvc, post(path).contentType(MediaType.APPLICATION_JSON).content(body));
        String text = r.getContentAsString(StandardCharsets.UTF_8);
        int status = r.getStatus();
        assertThat(status).as("%s answered %s", path, text).isBetween(200, 499);
        if (status < 300) {
            // A stream that started cannot change its status: a failure would be its last event.
            assertThat(text).as("%s answered %s", path, text).doesNotContain("event:error");
            return;
        }
        assertThat(r.getContentType()).isEqualTo(MediaType.APPLICATION_PROBLEM_JSON_VALUE);
        JsonNode problem = JSON.readTree(text);
        assertThat(problem.path("status").asInt()).isEqualTo(status);
        assertThat(problem.path("detail").asString()).isNotBlank();
        if (status == 400 || status == 413) {
            assertThat(problem.path("field").asString()).as("the field named in %s", text).isNotBlank();
        }
        if (path.startsWith("/v1/")) {
            JsonNode error = problem.path("error");
            assertThat(error.path("message").asString()).isEqualTo(problem.path("detail").asString());
            assertThat(error.path("type").asString()).isIn("invalid_request_error", "rate_limit_error");
            assertThat(error.path("param").isMissingNode()).isFalse();
        }
    }
}
