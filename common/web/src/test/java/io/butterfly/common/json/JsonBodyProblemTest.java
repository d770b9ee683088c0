package io.butterfly.common.json;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

/** A body no field of which is to blame is described as what it is: not JSON, not an object, or nothing. */
class JsonBodyProblemTest {

    record Request(String prompt) {
    }

    private static String problemOf(String json) {
        try {
            JsonMapper.builder().build().readValue(json, Request.class);
        } catch (RuntimeException e) {
            return JsonFieldPath.bodyProblem(new IllegalStateException("wrapped", e));
        }
        throw new AssertionError("parsed: " + json);
    }

    @Test
    void brokenJsonIsNotValidJson() {
        assertThat(problemOf("{\"prompt\": ")).isEqualTo("request body is not valid JSON");
        assertThat(problemOf("nope")).isEqualTo("request body is not valid JSON");
    }

    @Test
    void validJsonThatIsNotAnObjectIsSaidToBeSo() {
        assertThat(problemOf("[]")).isEqualTo("request body must be a JSON object");
        assertThat(problemOf("42")).isEqualTo("request body must be a JSON object");
    }

    @Test
    void noBodyAtAllIsMissing() {
        assertThat(JsonFieldPath.bodyProblem(new IllegalStateException("Required request body is missing")))
                .startsWith("request body is missing");
    }
}
