package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;
import static org.springframework.test.web.servlet.request.MockMvcRequestBuilders.get;

import io.butterfly.coordinator.api.grpc.LoadTelemetry;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.config.OpenApiConfiguration;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.coordinator.control.Liveness;
import io.butterfly.coordinator.control.PausedRequests;
import io.butterfly.coordinator.inference.InferenceService;
import java.time.Clock;
import org.junit.jupiter.api.Test;
import org.springdoc.core.configuration.SpringDocConfiguration;
import org.springdoc.core.properties.SpringDocConfigProperties;
import org.springdoc.webmvc.core.configuration.SpringDocWebMvcConfiguration;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.webmvc.test.autoconfigure.WebMvcTest;
import org.springframework.context.annotation.Import;
import org.springframework.test.context.bean.override.mockito.MockitoBean;
import org.springframework.test.web.servlet.MockMvc;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The coordinator serves its REST API's OpenAPI document ({@code /v3/api-docs}), generated from the controllers and
 * the records they answer: the schemas carry the wire names clients read.
 */
@WebMvcTest(controllers = {SystemStateController.class, ServingController.class, InferenceController.class})
@ImportAutoConfiguration({SpringDocConfiguration.class, SpringDocConfigProperties.class,
        SpringDocWebMvcConfiguration.class})
@Import(OpenApiConfiguration.class)
class OpenApiDocumentTest {

    @Autowired
    MockMvc mvc;
    @MockitoBean
    ControlLog control;
    @MockitoBean
    Liveness liveness;
    @MockitoBean
    CoordinatorProperties props;
    @MockitoBean
    LoadTelemetry telemetry;
    @MockitoBean
    PausedRequests paused;
    @MockitoBean
    Clock clock;
    @MockitoBean
    InferenceService inference;
    @MockitoBean
    InferenceStreams streams;
    @MockitoBean
    io.butterfly.coordinator.control.PrefixCacheReports prefixCaches;

    @Test
    void theDocumentDescribesTheAnswersRecordsByTheirWireNames() throws Exception {
        String body = mvc.perform(get("/v3/api-docs")).andReturn().getResponse().getContentAsString();
        JsonNode doc = JsonMapper.builder().build().readTree(body);
        assertThat(doc.path("paths").has("/api/v1/system/state")).as(body).isTrue();
        JsonNode schemas = doc.path("components").path("schemas");
        assertThat(schemas.path("SystemStatus").path("properties").has("system_state")).as(body).isTrue();
        assertThat(schemas.path("SystemStatus").path("properties").has("last_applied_index")).isTrue();
        assertThat(schemas.path("Generation").path("properties").has("token_logprobs")).isTrue();
        assertThat(schemas.path("ServingStatus").path("properties").has("kv_cache_usage")).isTrue();
        assertThat(schemas.path("Worker").toString()).contains("kv_cache_budget_bytes");
        assertThat(doc.path("info").path("title").asString()).isEqualTo("Butterfly coordinator");
    }
}
