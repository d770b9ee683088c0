package io.butterfly.coordinator.api.rest;

import static org.assertj.core.api.Assertions.assertThat;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.butterfly.coordinator.inference.InferenceService;
import io.butterfly.coordinator.inference.Requester;
import java.io.IOException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;

/**
 * The JSON body of {@code POST /api/v1/inference} and {@code /api/v1/inference/stream} (one record, one validation;
 * docs/testing.md, fuzzing), bound and validated as the coordinator does it before any work, without Spring MVC in the
 * way: the message converter's {@code JsonMapper} (strict request JSON, the parser's limits) binds the bytes to
 * {@link InferenceController.Body}, and the inference service validates and tokenizes the request as the controller
 * hands it over ({@link InferenceService#prepare}, which the stream's start calls too), over a READY cluster. Any body is
 * admitted, or refused as the problem handlers answer with 4xx naming the field; nothing else escapes (it would be a
 * 500). Thousands of executions a second where the same check through MockMvc ran tens; the end-to-end target over a
 * real Tomcat with the key filters is {@link ServletRequestBodyFuzzTest}.
 */
// Per input: a slow one is a finding too (Jazzer passes it on as libFuzzer's -timeout).
@Timeout(30)
class RequestBodyFuzzTest {

    private static RequestBodies bodies;

    @BeforeAll
    static void start() throws IOException {
        bodies = new RequestBodies();
    }

    @AfterAll
    static void stop() {
        bodies.close();
    }

    @FuzzTest(maxDuration = "30s")
    void anyInferenceBodyIsAdmittedOrRefused(byte[] body) {
        InferenceService.Prepared admitted;
        try {
            InferenceController.Body bound = bodies.mapper().readValue(body, InferenceController.Body.class);
            if (bound == null) {
                return; // the JSON null: Spring MVC answers 400, a required body is missing
            }
            admitted = bodies.inference().prepare(bound.request(), null, Requester.ANONYMOUS);
        } catch (RuntimeException refused) {
            RequestBodies.assertAnswered4xx(refused);
            return;
        }
        assertThat(admitted.handle().promptTokenIds()).isNotEmpty();
    }
}
