package io.butterfly.cli.client;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.butterfly.cli.command.Commands;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The generate and status commands against a stand-in for the coordinator's endpoints (a JDK HttpServer). */
class GenerateCommandTest {

    /** Shaped like InferenceController.toJson with logprobs 2. */
    private static final String ANSWER = """
            {"task_id": "t1", "model_id": "demo", "prompt_token_ids": [1, 5], "token_ids": [42, 7], "text": " hi there",
             "finish_reason": "length", "token_logprobs": [-0.25, -1.5],
             "logprobs": [[{"token_id": 42, "logprob": -0.25}, {"token_id": 9, "logprob": -1.75}],
                          [{"token_id": 3, "logprob": -1.0}, {"token_id": 7, "logprob": -1.5}]],
             "usage": {"prompt_tokens": 2, "completion_tokens": 2, "total_tokens": 4},
             "timings": {"time_to_first_token_ms": 12.5, "decode_tokens_per_second": 40.0}}
            """;

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();
    private HttpServer coordinator;
    private volatile String requestBody;

    @BeforeEach
    void startCoordinator() throws Exception {
        coordinator = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        coordinator.createContext("/api/v1/inference", exchange -> {
            requestBody = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            byte[] body = ANSWER.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/json");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(body);
            }
        });
        coordinator.createContext("/api/v1/inference/stream", exchange -> {
            requestBody = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "text/event-stream");
            exchange.sendResponseHeaders(200, 0);
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(streamed.getBytes(StandardCharsets.UTF_8));
            }
        });
        coordinator.start();
    }

    /** Events as Spring's SseEmitter writes them (no space after the colon), then the answer as the last. */
    private volatile String streamed = """
            event:token
            data:{"task_id": "t1", "index": 0, "token_id": 42, "text": " hi", "logprob": -0.25}

            event:token
            data:{"task_id": "t1", "index": 1, "token_id": 7, "text": " there", "logprob": -1.5}

            event:done
            data:%s

            """.formatted(ANSWER.replace("\n", " "));

    @AfterEach
    void stopCoordinator() {
        coordinator.stop(0);
    }

    /** Runs {@code generate} or {@code status} (the first argument) against the stand-in coordinator. */
    private int run(String... args) {
        Object command = args[0].equals("generate") ? new GenerateCommand() : new StatusCommand();
        CommandLine line = Commands.line(command);
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        String[] withUrl = new String[args.length + 1];
        withUrl[0] = "--url";
        withUrl[1] = "http://127.0.0.1:" + coordinator.getAddress().getPort();
        System.arraycopy(args, 1, withUrl, 2, args.length - 1);
        return line.execute(withUrl);
    }

    @Test
    void jsonIsAFlagSoTheTextAfterItIsThePrompt() throws Exception {
        assertThat(run("generate", "--json", "some text")).as(err.toString()).isZero();
        assertThat(JsonMapper.builder().build().readTree(requestBody).path("prompt").asString()).isEqualTo("some text");
        JsonNode printed = JsonMapper.builder().build().readTree(out.toString());
        assertThat(printed.path("text").asString()).isEqualTo(" hi there");
    }

    @Test
    void logprobsArePrintedInTheHumanReadableOutput() throws Exception {
        assertThat(run("generate", "hi", "--logprobs", "2")).as(err.toString()).isZero();
        assertThat(JsonMapper.builder().build().readTree(requestBody).path("logprobs").asInt()).isEqualTo(2);
        assertThat(out.toString().lines().toList()).containsSubsequence(
                "answer:   hi there",
                "logprobs: step    token   logprob   most likely (token:logprob)",
                "             1       42   -0.2500   42:-0.2500  9:-1.7500",
                "             2        7   -1.5000   3:-1.0000  7:-1.5000");
    }

    @Test
    void streamPrintsTheTextAsItComesThenTheSummary() throws Exception {
        assertThat(run("generate", "hi", "--stream")).as(err.toString()).isZero();
        assertThat(JsonMapper.builder().build().readTree(requestBody).path("prompt").asString()).isEqualTo("hi");
        assertThat(out.toString().lines().toList()).containsSubsequence("prompt:  hi", "answer:   hi there",
                "tokens:  [42,7]");
        assertThat(err.toString()).contains("2 prompt + 2 generated tokens, finish_reason=length");
        assertThat(out.toString()).doesNotContain("generated tokens");
    }

    @Test
    void aStreamThatFailsSaysWhyAndExitsNonZero() throws Exception {
        streamed = """
                event:token
                data:{"task_id": "t1", "index": 0, "token_id": 42, "text": " hi", "logprob": -0.25}

                event:error
                data:{"title": "Cluster error", "status": 503, "detail": "stage worker-1 is unreachable"}

                """;
        assertThat(run("generate", "hi", "--stream")).isEqualTo(1);
        assertThat(out.toString()).contains("answer:   hi");
        assertThat(err.toString()).contains("the generation failed:").contains("stage worker-1 is unreachable")
                .doesNotContain("without an answer");
    }

    @Test
    void aRefusedStreamPrintsTheProblemAndNoAnswer() throws Exception {
        coordinator.removeContext("/api/v1/inference/stream");
        coordinator.createContext("/api/v1/inference/stream", exchange -> {
            byte[] body = "{\"status\": 429, \"detail\": \"64 tasks are running\"}".getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "application/problem+json");
            exchange.sendResponseHeaders(429, body.length);
            try (OutputStream o = exchange.getResponseBody()) {
                o.write(body);
            }
        });
        assertThat(run("generate", "hi", "--stream")).isEqualTo(1);
        assertThat(out.toString()).doesNotContain("answer:");
        assertThat(err.toString()).contains("HTTP 429").contains("64 tasks are running");
    }

    @Test
    void stopIsSentAsAListOfOneString() throws Exception {
        assertThat(run("generate", "hi", "--stop", "\n\n")).as(err.toString()).isZero();
        JsonNode sent = JsonMapper.builder().build().readTree(requestBody);
        assertThat(sent.path("stop").isArray()).isTrue();
        assertThat(sent.path("stop").get(0).asString()).isEqualTo("\n\n");
    }

    @Test
    void streamAndJsonTogetherAreAUsageError() throws Exception {
        assertThat(run("generate", "hi", "--stream", "--json")).isEqualTo(2);
        assertThat(requestBody).isNull();
    }

    @Test
    void withoutLogprobsNoTableIsPrinted() throws Exception {
        assertThat(run("generate", "hi")).as(err.toString()).isZero();
        assertThat(out.toString()).contains("answer:   hi there").doesNotContain("logprobs:");
    }

    @Test
    void malformedNumbersAreUsageErrorsAndNothingIsSent() throws Exception {
        for (List<String> bad : List.of(
                List.of("generate", "hi", "--max-tokens", "abc"),
                List.of("generate", "hi", "--seed", "abc"),
                List.of("generate", "hi", "--temperature", "hot"),
                List.of("generate", "hi", "--top-p", "x"),
                List.of("generate", "hi", "--logprobs", "three"),
                List.of("generate", "hi", "--top-k", "1.5"))) {
            err.getBuffer().setLength(0);
            assertThat(run(bad.toArray(String[]::new))).as(bad.toString()).isEqualTo(2);
            assertThat(err.toString()).as(bad.toString()).startsWith("error: --").containsPattern("must be (an integer|a number), got '");
        }
        assertThat(err.toString()).isEqualTo("error: --top-k must be an integer, got '1.5'" + System.lineSeparator());
        assertThat(requestBody).isNull();
        assertThat(out.toString()).isEmpty();
    }

    @Test
    void maxTokensMessageIsExact() throws Exception {
        assertThat(run("generate", "hi", "--max-tokens", "abc")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("error: --max-tokens must be an integer, got 'abc'" + System.lineSeparator());
    }

    @Test
    void unknownOptionsAreRejectedPerCommand() throws Exception {
        assertThat(run("generate", "hi", "--max-token", "3")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("error: unknown option --max-token for generate" + System.lineSeparator());
        err.getBuffer().setLength(0);
        assertThat(run("status", "--json")).isEqualTo(2);
        assertThat(err.toString()).isEqualTo("error: unknown option --json for status" + System.lineSeparator());
        assertThat(requestBody).isNull();
    }
}
