package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Structured output across a node loss: JSON-schema generations (greedy and seeded sampling, on a random model whose
 * unconstrained output is gibberish) stream while a pipeline worker is killed (as by SIGKILL); they pause, the spare
 * takes the lost stage, they replay their tokens (the grammar's state follows them) and finish with the bytes of a
 * run without the failure: a value that parses and has the schema's shape.
 */
class StructuredOutputResumeIT {

    private static final String SCHEMA = """
            {"type": "json_schema", "json_schema": {"name": "scores", "strict": true, "schema": {
              "type": "object", "additionalProperties": false, "required": ["items"], "properties": {
                "items": {"type": "array", "minItems": 4, "maxItems": 4, "items": {
                  "type": "object", "additionalProperties": false, "required": ["name", "score", "ok"],
                  "properties": {"name": {"type": "string", "maxLength": 6}, "score": {"type": "integer"},
                                 "ok": {"type": "boolean"}}}}}}}}""";

    @TempDir
    Path work;

    @Test
    void aJsonSchemaGenerationThatLosesAWorkerFinishesWithTheBytesOfARunWithoutTheFailure() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(2);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 3; i++) { // two stages and a spare
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 2, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("spares").size() == 1, Duration.ofMinutes(8));
            String victim = ready.path("pipeline").get(1).asString();
            List<String> bodies = List.of(
                    "{\"token_ids\": [5, 17, 99, 260, 31], \"max_tokens\": 240, \"temperature\": 0, "
                            + "\"response_format\": " + SCHEMA + "}",
                    "{\"token_ids\": [7, 300, 12, 45], \"max_tokens\": 240, \"temperature\": 0.9, \"seed\": 11, "
                            + "\"response_format\": " + SCHEMA + "}");
            List<JsonNode> expected = new ArrayList<>();
            for (String body : bodies) {
                JsonNode answer = cluster.post("/api/v1/inference", body).json();
                assertThat(answer.path("finish_reason").asString()).as(answer.toString()).isEqualTo("stop");
                assertValue(answer.path("text").asString());
                expected.add(answer);
            }

            CountDownLatch underWay = new CountDownLatch(bodies.size());
            List<Future<Stream>> streams = new ArrayList<>();
            for (String body : bodies) {
                streams.add(clients.submit(() -> {
                    Stream s = new Stream(underWay);
                    new ResumableStream(List.of(cluster.coordinatorUrl() + "/api/v1/inference/stream"),
                            Duration.ofMinutes(5), Duration.ofMinutes(5), notice -> { }).post(body, s::onEvent);
                    return s;
                }));
            }
            assertThat(underWay.await(2, TimeUnit.MINUTES)).as("every stream under way").isTrue();
            long killedAt = System.nanoTime();
            cluster.kill(victim);
            for (int i = 0; i < streams.size(); i++) {
                Stream s = streams.get(i).get(5, TimeUnit.MINUTES);
                List<Long> tokens = ResumeIT.longs(expected.get(i).path("token_ids"));
                assertThat(s.tokens).as("stream %d: the tokens of a run without the failure", i).isEqualTo(tokens);
                assertThat(s.done.path("text").asString()).as("stream %d: the same bytes", i)
                        .isEqualTo(expected.get(i).path("text").asString());
                assertThat(s.text.toString()).isEqualTo(expected.get(i).path("text").asString());
                assertThat(s.arrivals.get(s.arrivals.size() - 1)).as("stream %d still generated when %s was killed", i,
                        victim).isGreaterThan(killedAt);
                System.out.printf("StructuredOutputResumeIT: stream %d, %d tokens: %s%n", i, tokens.size(), s.text);
            }
            JsonNode after = cluster.awaitState(st -> ready(st) && st.path("paused_tasks").isEmpty(),
                    Duration.ofMinutes(1));
            assertThat(after.path("epoch").asLong()).as("the spare took the lost stage").isEqualTo(2);
        } finally {
            clients.shutdownNow();
        }
    }

    /** The text is a value of {@link #SCHEMA}. */
    private static void assertValue(String text) {
        JsonNode v = ClusterApi.JSON.readTree(text);
        assertThat(v.propertyNames()).containsExactly("items");
        assertThat(v.get("items").size()).isEqualTo(4);
        for (JsonNode item : v.get("items")) {
            assertThat(item.propertyNames()).containsExactly("name", "score", "ok");
            String name = item.get("name").asString();
            assertThat(name.codePointCount(0, name.length())).isLessThanOrEqualTo(6);
            assertThat(item.get("score").isIntegralNumber()).isTrue();
            assertThat(item.get("ok").isBoolean()).isTrue();
        }
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }

    /** One stream's tokens, text and answer. */
    private static final class Stream {
        private final CountDownLatch underWay;
        final List<Long> tokens = new ArrayList<>();
        final StringBuilder text = new StringBuilder();
        final List<Long> arrivals = new ArrayList<>();
        JsonNode done;

        Stream(CountDownLatch underWay) {
            this.underWay = underWay;
        }

        void onEvent(String name, String data) {
            JsonNode event = ClusterApi.JSON.readTree(data);
            if (name.equals("token")) {
                tokens.add(event.path("token_id").asLong());
                text.append(event.path("text").asString());
                arrivals.add(System.nanoTime());
                if (tokens.size() == 5) {
                    underWay.countDown();
                }
            } else if (name.equals("done")) {
                done = event;
            } else {
                throw new AssertionError("unexpected " + name + " event: " + data);
            }
        }
    }
}
