package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.TokenizerGenerator;
import io.butterfly.common.web.limits.RequestLimitsAutoConfiguration;
import io.butterfly.coordinator.config.CoordinatorProperties;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.InvalidRequestException;
import io.butterfly.coordinator.inference.ReadyCluster;
import io.butterfly.coordinator.inference.ScriptedCluster;
import io.butterfly.coordinator.inference.UnknownModelException;
import io.butterfly.coordinator.jinja.JinjavaChatTemplates;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Clock;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.mock.http.MockHttpInputMessage;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.exc.InvalidDefinitionException;
import tools.jackson.databind.json.JsonMapper;

/**
 * What the coordinator does with a request body before any work, without Spring MVC in the way (the fast request-body
 * fuzz targets, docs/testing.md#fuzzing): the {@link JsonMapper} its message converter binds bodies with (Spring Boot's
 * Jackson auto-configuration with the coordinator's {@link StrictRequestJson} and the request limits' parser
 * constraints at their defaults, from a context of those alone, started once), a READY cluster of the tiny model (its
 * ChatML template) whose {@link InferenceService} validates and tokenizes requests as the controllers hand them over,
 * and the check that a refusal is one the problem handlers answer with 4xx naming a field.
 */
public final class RequestBodies implements AutoCloseable {

    /** The coordinator's JSON configuration, nothing else (no web server, no controllers). */
    @Configuration(proxyBeanMethods = false)
    @ImportAutoConfiguration({JacksonAutoConfiguration.class, RequestLimitsAutoConfiguration.class})
    @Import(StrictRequestJson.class)
    static class Json {
    }

    private final ConfigurableApplicationContext json;
    private final ScriptedCluster cluster;
    private final InferenceService inference;
    private final CoordinatorProperties props = ReadyCluster.props("coordinator-0");

    public RequestBodies() throws IOException {
        json = new SpringApplicationBuilder(Json.class).web(WebApplicationType.NONE).logStartupInfo(false)
                .bannerMode(org.springframework.boot.Banner.Mode.OFF).run();
        cluster = new ScriptedCluster(Files.createTempDirectory("request-bodies"));
        inference = cluster.service(ScriptedCluster.following(new long[]{5}), new JinjavaChatTemplates(Clock.systemUTC())
                .compile(TokenizerGenerator.CHAT_TEMPLATE, "<s>", "</s>"));
    }

    /** The mapper request bodies are bound with. */
    public JsonMapper mapper() {
        return json.getBean(JsonMapper.class);
    }

    public InferenceService inference() {
        return inference;
    }

    public CoordinatorProperties props() {
        return props;
    }

    /**
     * Asserts that {@code refusal} (thrown while binding or validating a body) is answered 4xx naming a field: a body
     * that does not bind as the message converter reports it to {@link ProblemHandler} (400, or 413 past a parser
     * limit), or a refusal of its content ({@link InvalidRequestException}: 400 or 413, {@link UnknownModelException}:
     * 404); anything else is rethrown, a finding (it would be a 500).
     */
    public static void assertAnswered4xx(RuntimeException refusal) {
        if (refusal instanceof JacksonException e && !(e instanceof InvalidDefinitionException)) {
            // as Spring's Jackson converter reports what it could not read
            HttpMessageNotReadableException unreadable = new HttpMessageNotReadableException(
                    "JSON parse error: " + e.getOriginalMessage(), e, new MockHttpInputMessage(new byte[0]));
            ResponseEntity<Object> answer = new ProblemHandler().handleHttpMessageNotReadable(unreadable,
                    new HttpHeaders(), HttpStatus.BAD_REQUEST, null);
            assertThat(answer.getStatusCode().value()).isIn(400, 413);
            ProblemDetail problem = (ProblemDetail) answer.getBody();
            assertThat(problem).isNotNull();
            assertThat(problem.getDetail()).isNotBlank();
            // the field as the client wrote it: an unknown field named " " is named " " (a fuzzing finding of the check)
            assertThat(problem.getProperties().get("field")).isInstanceOf(String.class);
            assertThat((String) problem.getProperties().get("field")).isNotEmpty();
            return;
        }
        if (refusal instanceof InvalidRequestException e) {
            assertThat(e.field()).as("the field of %s", e.getMessage()).isNotBlank();
            assertThat(e.getMessage()).isNotBlank();
            return;
        }
        if (refusal instanceof UnknownModelException e) {
            assertThat(e.field()).isEqualTo("model");
            return;
        }
        throw refusal;
    }

    @Override
    public void close() {
        cluster.close();
        json.close();
    }
}
