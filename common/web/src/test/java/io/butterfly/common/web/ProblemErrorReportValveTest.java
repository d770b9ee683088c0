package io.butterfly.common.web;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

class ProblemErrorReportValveTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();

    @Test
    void aRejectedPathKeepsTomcatsOwnMessage() {
        JsonNode problem = JSON.readTree(
                ProblemErrorReportValve.problem(400, "Invalid URI: [The hexadecimal encoding is invalid]", true));

        assertThat(problem.get("type").asString()).isEqualTo("about:blank");
        assertThat(problem.get("title").asString()).isEqualTo("Bad Request");
        assertThat(problem.get("status").asInt()).isEqualTo(400);
        assertThat(problem.get("detail").asString()).isEqualTo("The server rejected the request line or URL before it"
                + " reached the application: Invalid URI: [The hexadecimal encoding is invalid]");
        assertThat(problem.get("field").asString()).isEqualTo("path");
    }

    @Test
    void aMessageThatMayQuoteTheRequestIsDropped() {
        for (String message : new String[] {"Invalid character in [/api/v1/x]", "bad %ZZ", "nul \u0000 here",
                "é", "x".repeat(121)}) {
            JsonNode problem = JSON.readTree(ProblemErrorReportValve.problem(400, message, false));

            assertThat(problem.get("detail").asString())
                    .isEqualTo("The server rejected the request before it reached the application");
            assertThat(problem.has("field")).isFalse();
        }
    }

    @Test
    void aServerErrorSaysNothingOfItsCause() {
        JsonNode problem = JSON.readTree(ProblemErrorReportValve.problem(500, "java.lang.IllegalStateException: x", false));

        assertThat(problem.get("title").asString()).isEqualTo("Internal Server Error");
        assertThat(problem.get("status").asInt()).isEqualTo(500);
        assertThat(problem.get("detail").asString()).isEqualTo("The server could not process the request");
        assertThat(problem.has("field")).isFalse();
    }

    @Test
    void anUnknownStatusGetsItsClassAsTitle() {
        assertThat(JSON.readTree(ProblemErrorReportValve.problem(499, null, false)).get("title").asString())
                .isEqualTo("Client Error");
    }
}
