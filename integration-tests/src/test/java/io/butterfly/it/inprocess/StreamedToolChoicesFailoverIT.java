package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A streamed chat completion with {@code n} choices and a named tool (its arguments constrained to the function's
 * schema, in the generated model's Qwen2.5 tool format) loses a pipeline worker mid-stream (as by SIGKILL): the
 * choices pause, the spare takes the lost stage, they replay their tokens (each grammar's state follows them) and the
 * stream goes on on the same connection; every choice's streamed output (its text, each call's name and the pieces of
 * its arguments, its finish reason) is byte for byte that of the same request streamed without the failure, but the
 * call ids, which name the task.
 */
class StreamedToolChoicesFailoverIT {

    private static final String TOOLS = """
            [{"type": "function", "function": {"name": "record_scores", "strict": true, "parameters": {
              "type": "object", "additionalProperties": false, "required": ["items"], "properties": {
                "items": {"type": "array", "minItems": 4, "maxItems": 4, "items": {
                  "type": "object", "additionalProperties": false, "required": ["name", "score", "ok"],
                  "properties": {"name": {"type": "string", "maxLength": 6}, "score": {"type": "integer"},
                                 "ok": {"type": "boolean"}}}}}}}}]""";
    private static final String BODY = "{\"model\": \"tiny-llama\", \"messages\": [{\"role\": \"user\", \"content\": "
            + "\"Score these.\"}], \"tools\": " + TOOLS + ", \"tool_choice\": {\"type\": \"function\", \"function\": "
            + "{\"name\": \"record_scores\"}}, \"n\": 2, \"max_tokens\": 240, \"temperature\": 0.9, \"seed\": 23, "
            + "\"stream\": true}";

    /** {@link TinyModels#LLAMA_4} with room for the tools' system turn (some 500 tokens) and the calls. */
    private static final ModelConfig MODEL = new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 160, 512, 2048, 1e-5,
            10000.0, false, 1, 2);

    @TempDir
    Path work;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void everyChoiceOfAStreamThatLosesAWorkerStreamsTheBytesOfARunWithoutTheFailure() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(MODEL, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(1);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 3; i++) { // two stages and a spare
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 2, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("spares").size() == 1, Duration.ofMinutes(12));
            String victim = ready.path("pipeline").get(1).asString();

            Choices expected = stream(cluster, new CountDownLatch(0));
            assertThat(expected.byIndex.keySet()).containsExactly(0, 1);
            expected.byIndex.values().forEach(c -> {
                assertThat(c.finish).isEqualTo("tool_calls");
                assertThat(c.calls).hasSize(1);
                JsonNode arguments = ClusterApi.JSON.readTree(c.calls.get(0).arguments.toString());
                assertThat(arguments.path("items").size()).as("arguments of the function's schema").isEqualTo(4);
            });

            CountDownLatch underWay = new CountDownLatch(2);
            Future<Choices> failing = clients.submit(() -> stream(cluster, underWay));
            assertThat(underWay.await(3, TimeUnit.MINUTES)).as("both choices under way").isTrue();
            long killedAt = System.nanoTime();
            cluster.kill(victim);
            Choices after = failing.get(6, TimeUnit.MINUTES);
            for (int i = 0; i < 2; i++) {
                Choice got = after.byIndex.get(i);
                Choice want = expected.byIndex.get(i);
                assertThat(got.bytes()).as("choice %d: the bytes of a run without the failure", i)
                        .isEqualTo(want.bytes());
                assertThat(got.lastArrival).as("choice %d still streamed when %s was killed", i, victim)
                        .isGreaterThan(killedAt);
                System.out.printf("StreamedToolChoicesFailoverIT: choice %d: %s%n", i, got.bytes());
            }
            JsonNode state = cluster.awaitState(s -> ready(s) && s.path("paused_tasks").isEmpty(), Duration.ofMinutes(1));
            assertThat(state.path("epoch").asLong()).as("the spare took the lost stage").isEqualTo(2);
        } finally {
            clients.shutdownNow();
        }
    }

    /** Streams {@link #BODY}; counts {@code underWay} down once per choice that streamed 5 chunks. */
    private Choices stream(InProcessCluster cluster, CountDownLatch underWay) throws Exception {
        HttpRequest r = HttpRequest.newBuilder(URI.create(cluster.coordinatorUrl() + "/v1/chat/completions"))
                .timeout(Duration.ofMinutes(8)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(BODY)).build();
        HttpResponse<java.util.stream.Stream<String>> response = http.send(r, HttpResponse.BodyHandlers.ofLines());
        if (response.statusCode() != 200) {
            throw new AssertionError("status " + response.statusCode() + ": " + String.join("\n", response.body().toList()));
        }
        Choices choices = new Choices();
        List<String> data = new ArrayList<>();
        response.body().filter(l -> l.startsWith("data: ")).map(l -> l.substring("data: ".length())).forEach(d -> {
            data.add(d);
            if (!d.equals("[DONE]")) {
                choices.add(ClusterApi.JSON.readTree(d), underWay);
            }
        });
        assertThat(data).as("the stream ends with [DONE], once").last().isEqualTo("[DONE]");
        assertThat(data).filteredOn("[DONE]"::equals).hasSize(1);
        return choices;
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }

    /** A stream's choices, each put together from its chunks. */
    private static final class Choices {
        final Map<Integer, Choice> byIndex = new TreeMap<>();

        void add(JsonNode chunk, CountDownLatch underWay) {
            assertThat(chunk.path("object").asString()).isEqualTo("chat.completion.chunk");
            for (JsonNode choice : chunk.path("choices")) {
                Choice c = byIndex.computeIfAbsent(choice.path("index").asInt(), i -> new Choice());
                c.add(choice);
                if (++c.chunks == 5) {
                    underWay.countDown();
                }
            }
        }
    }

    /** One choice's streamed output. */
    private static final class Choice {
        final StringBuilder content = new StringBuilder();
        final List<Call> calls = new ArrayList<>();
        String finish;
        int chunks;
        long lastArrival;

        void add(JsonNode choice) {
            assertThat(finish).as("nothing of a choice after its finish: %s", choice).isNull();
            lastArrival = System.nanoTime();
            JsonNode delta = choice.path("delta");
            content.append(delta.path("content").asString(""));
            for (JsonNode piece : delta.path("tool_calls")) {
                int k = piece.path("index").asInt();
                if (k == calls.size()) {
                    calls.add(new Call(piece.path("function").path("name").asString()));
                }
                assertThat(k).as("calls in order").isEqualTo(calls.size() - 1);
                calls.get(k).arguments.append(piece.path("function").path("arguments").asString(""));
            }
            if (choice.hasNonNull("finish_reason")) {
                finish = choice.path("finish_reason").asString();
            }
        }

        /** What it streamed: its text, each call's name and arguments, its finish reason. */
        String bytes() {
            StringBuilder out = new StringBuilder(content);
            calls.forEach(c -> out.append("\n[call ").append(c.name).append(' ').append(c.arguments).append(']'));
            return out.append("\n[finish ").append(finish).append(']').toString();
        }
    }

    private record Call(String name, StringBuilder arguments) {
        Call(String name) {
            this(name, new StringBuilder());
        }
    }
}
