package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.harness.ClusterApi;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import tools.jackson.databind.JsonNode;

/**
 * JSON-schema generations across the loss of a pipeline worker, on any cluster (in-process or processes): on a READY
 * cluster of two stages and a spare serving {@link TinyModels#LLAMA_4}, each request (greedy, and seeded sampling) is
 * answered once without a failure; then the same requests stream, the second stage's worker is killed while they
 * generate, they pause, the spare takes the lost stage, they replay their tokens (the grammar's state follows them)
 * and finish with the tokens and bytes of the run without the failure: a value that parses and has the schema's
 * shape.
 */
public final class JsonSchemaStreamsAcrossAKill {

    private static final String SCHEMA = """
            {"type": "json_schema", "json_schema": {"name": "scores", "strict": true, "schema": {
              "type": "object", "additionalProperties": false, "required": ["items"], "properties": {
                "items": {"type": "array", "minItems": 4, "maxItems": 4, "items": {
                  "type": "object", "additionalProperties": false, "required": ["name", "score", "ok"],
                  "properties": {"name": {"type": "string", "maxLength": 6}, "score": {"type": "integer"},
                                 "ok": {"type": "boolean"}}}}}}}}""";
    private static final List<String> BODIES = List.of(
            "{\"token_ids\": [5, 17, 99, 260, 31], \"max_tokens\": 240, \"temperature\": 0, "
                    + "\"response_format\": " + SCHEMA + "}",
            "{\"token_ids\": [7, 300, 12, 45], \"max_tokens\": 240, \"temperature\": 0.9, \"seed\": 11, "
                    + "\"response_format\": " + SCHEMA + "}");

    /**
     * Runs the scenario on {@code cluster}; {@code kill} ends a worker by name. {@code label} prefixes what it prints.
     *
     * @return the tokens each stream generated after the kill ended the worker
     */
    public static List<Integer> run(ClusterApi cluster, Consumer<String> kill, String label) throws Exception {
        JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("spares").size() == 1, Duration.ofMinutes(8));
        String victim = ready.path("pipeline").get(1).asString();
        List<JsonNode> expected = new ArrayList<>();
        for (String body : BODIES) {
            JsonNode answer = cluster.post("/api/v1/inference", body).json();
            assertThat(answer.path("finish_reason").asString()).as(answer.toString()).isEqualTo("stop");
            assertValue(answer.path("text").asString());
            expected.add(answer);
        }

        ExecutorService clients = Executors.newFixedThreadPool(BODIES.size());
        try {
            CountDownLatch underWay = new CountDownLatch(BODIES.size());
            List<Future<Stream>> streams = new ArrayList<>();
            for (String body : BODIES) {
                streams.add(clients.submit(() -> {
                    Stream s = new Stream(underWay);
                    new ResumableStream(List.of(cluster.coordinatorUrl() + "/api/v1/inference/stream"),
                            Duration.ofMinutes(5), Duration.ofMinutes(5), notice -> { }).post(body, s::onEvent);
                    return s;
                }));
            }
            assertThat(underWay.await(3, TimeUnit.MINUTES)).as("every stream under way").isTrue();
            kill.accept(victim);
            long killed = System.nanoTime(); // the worker is gone: a token that arrives later was generated after
            List<Integer> afterKill = new ArrayList<>();
            for (int i = 0; i < streams.size(); i++) {
                Stream s = streams.get(i).get(5, TimeUnit.MINUTES);
                List<Long> tokens = longs(expected.get(i).path("token_ids"));
                assertThat(s.tokens).as("stream %d: the tokens of a run without the failure", i).isEqualTo(tokens);
                assertThat(s.done.path("text").asString()).as("stream %d: the same bytes", i)
                        .isEqualTo(expected.get(i).path("text").asString());
                assertThat(s.text.toString()).isEqualTo(expected.get(i).path("text").asString());
                int late = (int) s.arrivals.stream().filter(t -> t > killed).count();
                assertThat(late).as("stream %d still generated when %s was killed", i, victim).isPositive();
                afterKill.add(late);
                System.out.printf("%s: stream %d, %d tokens (%d after the kill): %s%n", label, i, tokens.size(), late,
                        s.text);
            }
            JsonNode after = cluster.awaitState(st -> ready(st) && st.path("paused_tasks").isEmpty(),
                    Duration.ofMinutes(1));
            assertThat(after.path("epoch").asLong()).as("the spare took the lost stage").isEqualTo(2);
            assertThat(after.path("pipeline").toString()).doesNotContain("\"" + victim + "\"");
            return afterKill;
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

    private static List<Long> longs(JsonNode array) {
        List<Long> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asLong()));
        return out;
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

    private JsonSchemaStreamsAcrossAKill() {
    }
}
