package io.butterfly.it.inprocess;

import io.butterfly.common.api.WorkerStatus;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.SingleProcessReference;
import io.butterfly.it.TinyModels;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import tools.jackson.databind.JsonNode;

/**
 * The whole path through the real services (in this JVM, {@link InProcessCluster}): discovery, registry, three
 * workers and the coordinator; bootstrap to READY, inference equal to a single-process run, state, and bad input.
 */
class PipelineEndToEndIT {

    static final ModelConfig LLAMA = TinyModels.LLAMA_6;

    @TempDir
    static Path work;
    static Path model;
    static InProcessCluster cluster;

    @BeforeAll
    static void startCluster() throws Exception {
        model = work.resolve("tiny-llama");
        ModelGenerator.generate(LLAMA, 7, model);
        cluster = new InProcessCluster(work);
        // Workers 0 and 2 verify and load their shards in the registry's store, as the launcher's do; worker 1
        // streams them over gRPC. The answers must not depend on how the bytes arrived.
        cluster.startAll(model, 3, i -> i == 1 ? new String[0] : new String[] {cluster.sharedStoreOption()});
        cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
    }

    @AfterAll
    static void stopCluster() {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void stateShowsTheReadyPipeline() throws Exception {
        JsonNode s = cluster.get("/api/v1/system/state").json();
        assertThat(s.path("system_state").asString()).isEqualTo("READY");
        assertThat(s.path("model_id").asString()).isEqualTo("tiny-llama");
        assertThat(s.path("merkle_root").asString()).matches("[0-9a-f]{64}");
        assertThat(s.path("epoch").asLong()).isPositive();
        assertThat(s.path("quorum").path("operational").asInt()).isEqualTo(3);
        BitSet layers = new BitSet();
        int workers = 0;
        for (JsonNode n : s.path("nodes")) {
            if (!"worker".equals(n.path("role").asString())) {
                continue;
            }
            workers++;
            assertThat(n.path("state").asString()).isEqualTo("READY");
            assertThat(n.path("progress").asDouble()).isEqualTo(1.0);
            assertThat(n.path("partition_checksum").asString()).matches("[0-9a-f]{64}");
            // The KV-cache budget the worker reported with READY, replicated for the scheduler.
            long budget = cluster.getFrom(n.path("id").asString(), "/api/v1/worker/metrics")
                    .as(WorkerStatus.Metrics.class).kvCacheBudgetBytes();
            assertThat(budget).isPositive();
            assertThat(n.path("kv_cache_budget_bytes").asLong()).isEqualTo(budget);
            for (JsonNode l : n.path("layers")) {
                assertThat(layers.get(l.asInt())).as("layer %s assigned twice", l).isFalse();
                layers.set(l.asInt());
            }
        }
        assertThat(workers).isEqualTo(3);
        // The committed ConfigChange (docs/bootstrap-protocol.md §5.3): three members, all needed.
        assertThat(s.path("config").path("current_member_count").asInt()).isEqualTo(3);
        assertThat(s.path("config").path("quorum_size").asInt()).isEqualTo(3);
        assertThat(s.path("config").path("cluster_name").asString()).isNotBlank();
        assertThat(s.path("feasibility").path("feasible").asBoolean()).isTrue();
        // Cross-validation: the root rebuilt from what the workers loaded is the manifest's.
        JsonNode v = s.path("weight_validation");
        assertThat(v.path("status").asString()).isEqualTo("VALID");
        assertThat(v.path("merkle_root").asString()).isEqualTo(s.path("merkle_root").asString());
        assertThat(v.path("partition_root").asString()).matches("[0-9a-f]{64}");
        assertThat(v.path("validated_nodes")).hasSize(3);
        assertThat(layers.cardinality()).isEqualTo(LLAMA.numLayers());
        assertThat(layers.nextClearBit(0)).isEqualTo(LLAMA.numLayers());
        // The validated weights are checkpointed in the control log (docs/bootstrap-protocol.md §5.3).
        JsonNode checkpoints = cluster.get("/api/v1/checkpoints").json().path("checkpoints");
        for (int i = 0; i < 100 && checkpoints.isEmpty(); i++) { // committed right after READY
            Thread.sleep(100);
            checkpoints = cluster.get("/api/v1/checkpoints").json().path("checkpoints");
        }
        assertThat(checkpoints).isNotEmpty();
        assertThat(checkpoints.get(0).path("epoch").asLong()).isEqualTo(s.path("epoch").asLong());
        assertThat(checkpoints.get(0).path("merkle_root").asString()).isEqualTo(s.path("merkle_root").asString());
    }

    @Test
    void everyInvariantHoldsOnTheReadyCluster() throws Exception {
        // Checked every second; wait for a check made after READY.
        JsonNode inv = null;
        for (int i = 0; i < 50; i++) {
            inv = cluster.get("/api/v1/system/invariants").json();
            if (!inv.path("checked_at").isNull()) {
                break;
            }
            Thread.sleep(100);
        }
        assertThat(inv.path("checked_at").asString()).isNotBlank();
        assertThat(inv.path("violations")).as(inv.toString()).isEmpty();
        assertThat(inv.path("holds").asBoolean()).isTrue();
        WorkerStatus.Connection[] connections = cluster.getFrom("worker-0", "/api/v1/worker/connections")
                .as(WorkerStatus.Connection[].class);
        assertThat(connections).hasSize(1);
        assertThat(connections[0].lastHeartbeatAck()).isNotBlank();
    }

    @ParameterizedTest
    @CsvSource({"0.0, 1.0, 0, 0", "0.9, 0.95, 0, 42", "1.3, 1.0, 5, 7"})
    void distributedGenerationEqualsSingleProcessBitForBit(double temperature, double topP, int topK, long seed)
            throws Exception {
        long[] prompt = {1, 17, 230, 5, 99, 311};
        int maxTokens = 12;
        ClusterApi.Reply r = cluster.post("/api/v1/inference", """
                {"token_ids": [1, 17, 230, 5, 99, 311], "max_tokens": %d, "temperature": %s, "top_p": %s, "top_k": %d,
                 "seed": %d, "logprobs": 5}
                """.formatted(maxTokens, temperature, topP, topK, seed));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        JsonNode body = r.json();
        SingleProcessReference.Generation expected = SingleProcessReference.generate(model, prompt, maxTokens,
                new SamplingParams(temperature, topP, topK, seed, 5));
        assertThat(longs(body.path("token_ids"))).isEqualTo(expected.tokens());
        assertThat(doubles(body.path("token_logprobs"))).isEqualTo(expected.logprobs());
        List<List<Double>> top = new ArrayList<>();
        for (JsonNode step : body.path("logprobs")) {
            List<Double> row = new ArrayList<>();
            step.forEach(e -> row.add(e.path("logprob").asDouble()));
            top.add(row);
        }
        assertThat(top).isEqualTo(expected.topLogprobs());
        assertThat(longs(body.path("prompt_token_ids"))).containsExactly(1L, 17L, 230L, 5L, 99L, 311L);
        assertThat(body.path("usage").path("completion_tokens").asInt()).isEqualTo(expected.tokens().size());
    }

    @Test
    void promptIsTokenizedAndAnswered() throws Exception {
        ClusterApi.Reply r = cluster.post("/api/v1/inference", "{\"prompt\": \"Hello, butterfly\", \"max_tokens\": 5}");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        JsonNode body = r.json();
        assertThat(body.path("prompt_token_ids").size()).isPositive();
        assertThat(body.path("token_ids").size()).isBetween(1, 5);
        assertThat(body.path("text").isString()).isTrue();
        assertThat(body.path("finish_reason").asString()).isIn("stop", "length");
        assertThat(body.path("timings").path("time_to_first_token_ms").asDouble()).isPositive();
        String taskId = body.path("task_id").asString();
        JsonNode task = cluster.awaitTaskEnded("coordinator", taskId);
        assertThat(task.path("state").asString()).isEqualTo("COMPLETED");
        assertThat(task.path("owner").asString()).isEqualTo("coordinator-0");
        assertThat(longs(task.path("token_ids"))).isEqualTo(longs(body.path("token_ids")));
    }

    /** A stop string ends the answer where its text first contains it, in the answer and in the stream alike. */
    @Test
    void aStopStringEndsTheAnswerBeforeIt() throws Exception {
        String request = "{\"token_ids\": [1, 17, 230, 5, 99, 311], \"max_tokens\": 16, \"ignore_eos\": true%s}";
        JsonNode full = cluster.post("/api/v1/inference", request.formatted("")).json();
        String text = full.path("text").asString();
        int k = text.length() / 2;
        while (k + 2 <= text.length() && text.substring(k, k + 2).contains("\uFFFD")) {
            k++;
        }
        assertThat(k + 2).as("a stop string taken from " + text).isLessThanOrEqualTo(text.length());
        String stop = text.substring(k, k + 2);
        String withStop = request.formatted(", \"stop\": [" + ClusterApi.JSON.writeValueAsString(stop) + "]");

        // One string as well as a list, as OpenAI's API takes it.
        JsonNode r = cluster.post("/api/v1/inference",
                request.formatted(", \"stop\": " + ClusterApi.JSON.writeValueAsString(stop))).json();
        assertThat(r.path("finish_reason").asString()).isEqualTo("stop");
        assertThat(r.path("text").asString()).isEqualTo(text.substring(0, text.indexOf(stop)));
        List<Long> ids = longs(r.path("token_ids"));
        assertThat(ids).isNotEmpty().isEqualTo(longs(full.path("token_ids")).subList(0, ids.size()));
        assertThat(ids.size()).as("no token after the one completing the stop string").isLessThan(16);

        ClusterApi.Reply streamed = cluster.post("/api/v1/inference/stream", withStop, "text/event-stream");
        StringBuilder joined = new StringBuilder();
        JsonNode done = null;
        for (String[] e : Streaming.events(streamed.body())) {
            JsonNode data = ClusterApi.JSON.readTree(e[1]);
            if (e[0].equals("token")) {
                joined.append(data.path("text").asString());
            } else {
                done = data;
            }
        }
        assertThat(joined).hasToString(r.path("text").asString());
        assertThat(done.path("token_ids")).isEqualTo(r.path("token_ids"));
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            {"prompt": ""}                                     | prompt
            {"prompt": "hi", "token_ids": [1, 2]}              | prompt
            {"max_tokens": 3}                                  | prompt
            {"prompt": "hi", "max_tokens": 0}                  | max_tokens
            {"prompt": "hi", "max_tokens": -4}                 | max_tokens
            {"prompt": "hi", "max_tokens": 100000}             | max_tokens
            {"token_ids": [1, 2, 512]}                         | token_ids[2]
            {"token_ids": []}                                  | token_ids
            {"prompt": "hi", "temperature": -1}                | temperature
            {"prompt": "hi", "top_p": 0}                       | top_p
            {"prompt": "hi", "top_k": -1}                      | top_k
            {"prompt": "hi", "logprobs": 21}                   | logprobs
            {"prompt": "hi", "max_tokens": "many"}             | max_tokens
            {"prompt": "hi",                                   | body
            {"prompt": "hi", "max_tokens": 99999999999999}     | max_tokens
            {"prompt": "hi", "max_tokens": 2.5}                | max_tokens
            {"prompt": "hi", "max_tokens": "5"}                | max_tokens
            {"prompt": "hi", "maxTokens": 2}                   | maxTokens
            {"prompt": 123}                                    | prompt
            {"token_ids": [1, "2"]}                            | token_ids[1]
            {"prompt": "hi", "stop": [""]}                     | stop[0]
            {"prompt": "hi", "stop": 7}                        | stop
            """)
    void badInputIsA400ProblemNamingTheField(String json, String field) throws Exception {
        ClusterApi.Reply r = cluster.post("/api/v1/inference", json);
        assertThat(r.status()).as(r.body()).isEqualTo(400);
        assertThat(r.contentType()).startsWith("application/problem+json");
        JsonNode problem = r.json();
        assertThat(problem.path("field").asString()).isEqualTo(field);
        assertThat(problem.path("detail").asString()).isNotBlank();
        assertThat(r.body()).doesNotContain("Exception").doesNotContain("\tat ");
        // The cluster is still serving after bad input.
        assertThat(cluster.get("/api/v1/system/state").json().path("system_state").asString()).isEqualTo("READY");
    }

    @Test
    void aPromptTooLongIs413NamingHowItWasGivenAndAnsweredAtOnce() throws Exception {
        ClusterApi.Reply text = cluster.post("/api/v1/inference", "{\"prompt\": \"" + "a".repeat(1_000_000) + "\"}");
        assertThat(text.status()).as(text.body()).isEqualTo(413);
        assertThat(text.contentType()).startsWith("application/problem+json");
        assertThat(text.json().path("field").asString()).isEqualTo("prompt");
        assertThat(text.json().path("detail").asString()).contains("characters");

        StringBuilder ids = new StringBuilder("1");
        for (int i = 1; i < 5000; i++) {
            ids.append(", 1");
        }
        ClusterApi.Reply tokens = cluster.post("/api/v1/inference", "{\"token_ids\": [" + ids + "]}");
        assertThat(tokens.status()).as(tokens.body()).isEqualTo(413);
        assertThat(tokens.json().path("field").asString()).isEqualTo("token_ids");
        assertThat(cluster.get("/api/v1/system/state").json().path("system_state").asString()).isEqualTo("READY");
    }

    @Test
    void everyListedNodeHasAState() throws Exception {
        for (JsonNode node : cluster.get("/api/v1/nodes").json()) {
            String id = node.path("id").asString();
            ClusterApi.Reply r = cluster.get("/api/v1/nodes/" + id + "/state");
            assertThat(r.status()).as(id + ": " + r.body()).isEqualTo(200);
            assertThat(r.json().path("id").asString()).isEqualTo(id);
            assertThat(r.json().path("role").asString()).isEqualTo(node.path("role").asString());
        }
    }

    @Test
    void unknownTaskIs404Problem() throws Exception {
        ClusterApi.Reply r = cluster.get("/api/v1/tasks/no-such-task/state");
        assertThat(r.status()).isEqualTo(404);
        assertThat(r.contentType()).startsWith("application/problem+json");
    }

    /** {@code POST /api/v1/inference/stream}: the same generation, told token by token as server-sent events. */
    @Nested
    class Streaming {

        private static final String REQUEST = """
                {"token_ids": [1, 17, 230, 5, 99, 311], "max_tokens": 12, "temperature": 0.9, "top_p": 0.95, "seed": 42, "logprobs": 3}
                """;

        @Test
        void streamedTokensAreTheAnswersTokensAndEndWithIt() throws Exception {
            ClusterApi.Reply streamed = cluster.post("/api/v1/inference/stream", REQUEST, "text/event-stream");
            assertThat(streamed.status()).as(streamed.body()).isEqualTo(200);
            assertThat(streamed.contentType()).startsWith("text/event-stream");
            List<String[]> events = events(streamed.body());
            assertThat(events).extracting(e -> e[0]).last().isEqualTo("done");
            List<String[]> tokens = events.subList(0, events.size() - 1);
            assertThat(tokens).extracting(e -> e[0]).containsOnly("token");

            JsonNode done = ClusterApi.JSON.readTree(events.get(events.size() - 1)[1]);
            JsonNode answer = cluster.post("/api/v1/inference", REQUEST).json();
            assertThat(longs(done.path("token_ids"))).isEqualTo(longs(answer.path("token_ids")));
            assertThat(doubles(done.path("token_logprobs"))).isEqualTo(doubles(answer.path("token_logprobs")));
            assertThat(done.path("text").asString()).isEqualTo(answer.path("text").asString());
            assertThat(done.path("logprobs")).isEqualTo(answer.path("logprobs"));

            List<Long> ids = new ArrayList<>();
            List<Double> logprobs = new ArrayList<>();
            StringBuilder text = new StringBuilder();
            for (int i = 0; i < tokens.size(); i++) {
                JsonNode t = ClusterApi.JSON.readTree(tokens.get(i)[1]);
                assertThat(t.path("index").asInt()).isEqualTo(i);
                assertThat(t.path("task_id").asString()).isEqualTo(done.path("task_id").asString());
                assertThat(t.path("logprobs")).isEqualTo(done.path("logprobs").get(i));
                ids.add(t.path("token_id").asLong());
                logprobs.add(t.path("logprob").asDouble());
                text.append(t.path("text").asString());
            }
            assertThat(ids).isEqualTo(longs(done.path("token_ids")));
            assertThat(logprobs).isEqualTo(doubles(done.path("token_logprobs")));
            assertThat(text).hasToString(done.path("text").asString());
            JsonNode task = cluster.awaitTaskEnded("coordinator", done.path("task_id").asString());
            assertThat(task.path("state").asString()).isEqualTo("COMPLETED");
        }

        @Test
        void aRefusedStreamIsAProblemResponseNotAnEventStream() throws Exception {
            ClusterApi.Reply r = cluster.post("/api/v1/inference/stream", "{\"token_ids\": [1, 2, 512]}",
                    "text/event-stream");
            assertThat(r.status()).as(r.body()).isEqualTo(400);
            assertThat(r.contentType()).startsWith("application/problem+json");
            assertThat(r.json().path("field").asString()).isEqualTo("token_ids[2]");
        }

        /** A client that hangs up mid-stream pauses its task (resumable with Last-Event-ID), instead of the cluster decoding on for nobody. */
        @Test
        void aClientThatHangsUpPausesItsTask() throws Exception {
            String body = "{\"token_ids\": [1, 17], \"max_tokens\": 240, \"ignore_eos\": true}";
            String taskId;
            try (Socket socket = new Socket("127.0.0.1", URI.create(cluster.coordinatorUrl()).getPort())) {
                socket.setSoTimeout(60_000);
                socket.getOutputStream().write(("POST /api/v1/inference/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        + "Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: "
                        + body.getBytes(StandardCharsets.UTF_8).length + "\r\n\r\n" + body).getBytes(StandardCharsets.UTF_8));
                BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
                String line;
                do {
                    line = in.readLine();
                    assertThat(line).as("the stream ended before a token").isNotNull();
                } while (!line.startsWith("data:"));
                taskId = ClusterApi.JSON.readTree(line.substring(5)).path("task_id").asString();
            } // hung up after the first token
            // The generation stops at the next step and waits, paused, for the client to come back with Last-Event-ID
            // (docs/api.md; it fails after engine.recovery-timeout): nothing more is generated meanwhile.
            JsonNode task = cluster.getFrom("coordinator", "/api/v1/tasks/" + taskId + "/state").json();
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(15);
            // Until the replica records the task (off the request's path, a flush interval later) it answers 404.
            while ((task.path("paused_at").isNull() || task.path("paused_at").isMissingNode())
                    && System.nanoTime() < deadline) {
                Thread.sleep(20);
                task = cluster.getFrom("coordinator", "/api/v1/tasks/" + taskId + "/state").json();
            }
            assertThat(task.path("pause_reason").asString()).as(task.toString()).isEqualTo("the client closed the stream");
            assertThat(task.path("state").asString()).isEqualTo("EXECUTING");
            Thread.sleep(500);
            JsonNode later = cluster.getFrom("coordinator", "/api/v1/tasks/" + taskId + "/state").json();
            assertThat(later.path("generated_tokens").asInt()).as(later.toString()).isEqualTo(task.path("generated_tokens").asInt())
                    .isLessThan(240);
            assertThat(cluster.post("/api/v1/inference", "{\"token_ids\": [1, 17], \"max_tokens\": 2}").status()).isEqualTo(200);
        }

        /** Each event as {name, data}, in order (the text/event-stream format's event and data fields). */
        static List<String[]> events(String stream) {
            List<String[]> out = new ArrayList<>();
            for (String block : stream.split("\n\n")) {
                String name = "message";
                StringBuilder data = new StringBuilder();
                for (String line : block.split("\n")) {
                    if (line.startsWith("event:")) {
                        name = line.substring(6).strip();
                    } else if (line.startsWith("data:")) {
                        data.append(data.isEmpty() ? "" : "\n").append(line.substring(5).stripLeading());
                    }
                }
                if (!data.isEmpty()) {
                    out.add(new String[] {name, data.toString()});
                }
            }
            return out;
        }
    }

    /**
     * OpenAI's chat API over the same cluster: the generated model's ChatML template, imported and signed by the
     * registry and fetched by the coordinator, makes the prompt, tokenized without the BOS a text prompt gets.
     */
    @Nested
    class OpenAiChat {

        private static final String CHATML = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n"
                + "What is a butterfly?<|im_end|>\n<|im_start|>assistant\n";

        @Test
        void aChatIsTheTemplatesPromptWithoutAnAddedBosAndStreamsTheSameReply() throws Exception {
            String body = """
                    {"model": "tiny-llama", "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "What is a butterfly?"}], "max_completion_tokens": 8, "temperature": 0,
                     "ignore_eos": true, "stream": %s}""";
            ClusterApi.Reply r = cluster.post("/v1/chat/completions", body.formatted("false"));
            assertThat(r.status()).as(r.body()).isEqualTo(200);
            JsonNode chat = r.json();
            assertThat(chat.path("object").asString()).isEqualTo("chat.completion");
            String reply = chat.path("choices").get(0).path("message").path("content").asString();

            // The same text as a plain prompt is tokenized with the BOS the tokenizer adds; the chat's is without it.
            JsonNode text = cluster.post("/api/v1/inference", ClusterApi.JSON.writeValueAsString(Map.of(
                    "prompt", CHATML, "max_tokens", 1))).json();
            List<Long> withBos = new ArrayList<>();
            text.path("prompt_token_ids").forEach(id -> withBos.add(id.asLong()));
            assertThat(withBos.get(0)).isEqualTo(LLAMA.bosTokenId());
            assertThat(chat.path("usage").path("prompt_tokens").asInt()).isEqualTo(withBos.size() - 1);
            JsonNode same = cluster.post("/api/v1/inference", ClusterApi.JSON.writeValueAsString(Map.of(
                    "token_ids", withBos.subList(1, withBos.size()), "max_tokens", 8, "temperature", 0,
                    "ignore_eos", true))).json();
            assertThat(reply).isEqualTo(same.path("text").asString());

            ClusterApi.Reply streamed = cluster.post("/v1/chat/completions", body.formatted("true"), "text/event-stream");
            assertThat(streamed.status()).as(streamed.body()).isEqualTo(200);
            List<String[]> events = Streaming.events(streamed.body());
            assertThat(events).extracting(e -> e[1]).last().isEqualTo("[DONE]");
            StringBuilder joined = new StringBuilder();
            for (String[] e : events.subList(0, events.size() - 1)) {
                joined.append(ClusterApi.JSON.readTree(e[1]).path("choices").get(0).path("delta").path("content")
                        .asString(""));
            }
            assertThat(joined).hasToString(reply);
        }
    }

    /** OpenAI's completions API, as its client libraries call it, over the same cluster and the same tokens. */
    @Nested
    class OpenAiCompletions {

        @Test
        void aCompletionHasTheNativeAnswersTokens() throws Exception {
            JsonNode native_ = cluster.post("/api/v1/inference", """
                    {"token_ids": [1, 17, 230, 5], "max_tokens": 10, "temperature": 0.7, "seed": 11, "logprobs": 2}
                    """).json();
            ClusterApi.Reply r = cluster.post("/v1/completions", """
                    {"model": "tiny-llama", "prompt": [1, 17, 230, 5], "max_tokens": 10, "temperature": 0.7, "seed": 11,
                     "logprobs": 2, "n": 1, "presence_penalty": 0, "user": "it"}
                    """);
            assertThat(r.status()).as(r.body()).isEqualTo(200);
            assertThat(r.contentType()).startsWith("application/json");
            JsonNode c = r.json();
            assertThat(c.path("object").asString()).isEqualTo("text_completion");
            assertThat(c.path("model").asString()).isEqualTo("tiny-llama");
            JsonNode choice = c.path("choices").get(0);
            assertThat(choice.path("text").asString()).isEqualTo(native_.path("text").asString());
            assertThat(choice.path("finish_reason").asString()).isEqualTo(native_.path("finish_reason").asString());
            assertThat(doubles(choice.path("logprobs").path("token_logprobs")))
                    .isEqualTo(doubles(native_.path("token_logprobs")));
            assertThat(c.path("usage")).isEqualTo(native_.path("usage"));
            String taskId = c.path("id").asString().replaceFirst("^cmpl-", "");
            assertThat(cluster.awaitTaskEnded("coordinator", taskId).path("state").asString()).isEqualTo("COMPLETED");
        }

        @Test
        void aStreamedCompletionJoinsToTheWholeOne() throws Exception {
            String body = """
                    {"prompt": "The butterfly", "max_tokens": 12, "temperature": 0, "stream": %s}
                    """;
            JsonNode whole = cluster.post("/v1/completions", body.formatted("false")).json();
            ClusterApi.Reply r = cluster.post("/v1/completions", body.formatted("true"), "text/event-stream");
            assertThat(r.status()).as(r.body()).isEqualTo(200);
            assertThat(r.contentType()).startsWith("text/event-stream").containsIgnoringCase("charset=UTF-8");
            assertThat(r.body()).startsWith("data: {").endsWith("data: [DONE]\n\n"); // the space, as OpenAI writes it
            List<String[]> events = Streaming.events(r.body());
            assertThat(events).extracting(e -> e[0]).containsOnly("message"); // unnamed events, as OpenAI's
            assertThat(events).extracting(e -> e[1]).last().isEqualTo("[DONE]");
            StringBuilder text = new StringBuilder();
            String finish = null;
            for (String[] e : events.subList(0, events.size() - 1)) {
                JsonNode choice = ClusterApi.JSON.readTree(e[1]).path("choices").get(0);
                text.append(choice.path("text").asString());
                finish = choice.path("finish_reason").isNull() ? finish : choice.path("finish_reason").asString();
            }
            assertThat(text).hasToString(whole.path("choices").get(0).path("text").asString());
            assertThat(finish).isEqualTo(whole.path("choices").get(0).path("finish_reason").asString());
        }

        @Test
        void modelsListTheServedOne() throws Exception {
            JsonNode models = cluster.get("/v1/models").json();
            assertThat(models.path("data")).hasSize(1);
            assertThat(models.path("data").get(0).path("id").asString()).isEqualTo("tiny-llama");
            assertThat(models.path("data").get(0).path("merkle_root").asString())
                    .isEqualTo(cluster.get("/api/v1/system/state").json().path("merkle_root").asString());
        }

        @ParameterizedTest
        @CsvSource(delimiter = '|', textBlock = """
                {"prompt": "hi", "n": 3, "best_of": 2}           | 400 | best_of
                {"prompt": "hi", "max_token": 3}                 | 400 | max_token
                {"prompt": "hi", "max_tokens": "3"}              | 400 | max_tokens
                {"prompt": [[1, 2], [3, 4]], "stream": true}     | 400 | prompt
                {"prompt": ["hi", [3, 512]]}                     | 400 | prompt[1][1]
                {"prompt": [1, 2, 512]}                          | 400 | prompt[2]
                {"prompt": "hi"                                  | 400 | body
                {"model": "gpt-3.5-turbo-instruct", "prompt": "hi"} | 404 | model
                """)
        void badRequestsNameTheFieldForBothKindsOfClient(String body, int status, String field) throws Exception {
            ClusterApi.Reply r = cluster.post("/v1/completions", body);
            assertThat(r.status()).as(r.body()).isEqualTo(status);
            assertThat(r.contentType()).startsWith("application/problem+json");
            JsonNode problem = r.json();
            assertThat(problem.path("field").asString()).isEqualTo(field);
            assertThat(problem.path("error").path("param").asString()).isEqualTo(field);
            assertThat(problem.path("error").path("message").asString()).isEqualTo(problem.path("detail").asString());
            assertThat(problem.path("error").path("type").asString()).isEqualTo("invalid_request_error");
        }
    }

    /**
     * Many requests at once run batched (the engine packs running sequences into micro-batches), and each gets the
     * tokens it gets alone: greedy and seeded sampling, token for token, logprobs within 1e-5.
     */
    @Nested
    class Batching {

        private static final int REQUESTS = 16;

        /**
         * Bit for bit: the workers' projections are oneDNN's, computed in row blocks that round a row alike whatever
         * shares it (the worker's ProjectionRowsTest), and attention runs per sequence, so a request's logprobs do not
         * depend on what it is batched with even with the default {@code butterfly.worker.batch-invariant=false}.
         */
        private static final double LOGPROB_TOLERANCE = 0;

        private double maxLogprobGap;

        private String request(int i) {
            java.util.Random random = new java.util.Random(i);
            StringBuilder ids = new StringBuilder();
            for (int t = 0; t < 3 + random.nextInt(20); t++) {
                ids.append(t == 0 ? "" : ", ").append(3 + random.nextInt(LLAMA.vocabSize() - 3));
            }
            String sampling = i % 2 == 0 ? "\"temperature\": 0" : "\"temperature\": 0.8, \"seed\": " + (1000 + i);
            return "{\"token_ids\": [" + ids + "], \"max_tokens\": " + (8 + random.nextInt(17))
                    + ", \"ignore_eos\": true, " + sampling + "}";
        }

        @Test
        void sixteenConcurrentStreamsEachGetTheTokensTheyGetAlone() throws Exception {
            List<JsonNode> alone = new ArrayList<>();
            for (int i = 0; i < REQUESTS; i++) {
                ClusterApi.Reply r = cluster.post("/api/v1/inference", request(i));
                assertThat(r.status()).as(r.body()).isEqualTo(200);
                alone.add(r.json());
            }
            java.util.concurrent.ExecutorService clients = java.util.concurrent.Executors.newFixedThreadPool(REQUESTS);
            try {
                List<java.util.concurrent.Future<ClusterApi.Reply>> streams = new ArrayList<>();
                java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
                for (int i = 0; i < REQUESTS; i++) {
                    String body = request(i);
                    streams.add(clients.submit(() -> {
                        go.await();
                        return cluster.post("/api/v1/inference/stream", body, "text/event-stream");
                    }));
                }
                go.countDown();
                for (int i = 0; i < REQUESTS; i++) {
                    ClusterApi.Reply r = streams.get(i).get(5, java.util.concurrent.TimeUnit.MINUTES);
                    assertThat(r.status()).as(r.body()).isEqualTo(200);
                    List<String[]> events = Streaming.events(r.body());
                    assertThat(events).extracting(e -> e[0]).last().isEqualTo("done");
                    JsonNode done = ClusterApi.JSON.readTree(events.get(events.size() - 1)[1]);
                    List<Long> told = new ArrayList<>();
                    for (String[] e : events.subList(0, events.size() - 1)) {
                        assertThat(e[0]).isEqualTo("token");
                        JsonNode t = ClusterApi.JSON.readTree(e[1]);
                        assertThat(t.path("index").asInt()).as("every token once, in order").isEqualTo(told.size());
                        told.add(t.path("token_id").asLong());
                    }
                    JsonNode expected = alone.get(i);
                    assertThat(told).as("request %d's stream", i).isEqualTo(longs(expected.path("token_ids")));
                    assertThat(longs(done.path("token_ids"))).as("request %d", i).isEqualTo(longs(expected.path("token_ids")));
                    List<Double> batched = doubles(done.path("token_logprobs"));
                    List<Double> single = doubles(expected.path("token_logprobs"));
                    for (int k = 0; k < single.size(); k++) {
                        maxLogprobGap = Math.max(maxLogprobGap, Math.abs(batched.get(k) - single.get(k)));
                        assertThat(batched.get(k)).as("request %d, token %d", i, k).isCloseTo(single.get(k),
                                org.assertj.core.data.Offset.offset(LOGPROB_TOLERANCE));
                    }
                }
                System.out.printf("batched vs alone: %d requests, largest logprob gap %.3g%n", REQUESTS, maxLogprobGap);
            } finally {
                clients.shutdownNow();
            }
            // They ran batched: micro-batches of more than one sequence.
            String metrics = cluster.get("/actuator/prometheus").body();
            assertThat(metrics).contains("butterfly_num_requests_running", "butterfly_num_requests_waiting",
                    "butterfly_time_to_first_token_seconds_bucket", "butterfly_inter_token_latency_seconds_bucket",
                    "butterfly_e2e_request_latency_seconds_bucket", "butterfly_prompt_tokens_total",
                    "butterfly_generation_tokens_total", "butterfly_kv_cache_usage_perc", "butterfly_stage_step_seconds",
                    "butterfly_pipeline_transport_seconds");
            java.util.regex.Matcher single = java.util.regex.Pattern.compile(
                    "butterfly_iteration_sequences_bucket\\{[^}]*le=\"1.0\"[^}]*} ([0-9.eE+]+)").matcher(metrics);
            java.util.regex.Matcher all = java.util.regex.Pattern.compile(
                    "butterfly_iteration_sequences_count(?:\\{[^}]*})? ([0-9.eE+]+)").matcher(metrics);
            assertThat(single.find() && all.find()).as(metrics).isTrue();
            assertThat(Double.parseDouble(all.group(1))).as("micro-batches of more than one sequence")
                    .isGreaterThan(Double.parseDouble(single.group(1)));
        }
    }

    private static List<Long> longs(JsonNode array) {
        List<Long> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asLong()));
        return out;
    }

    private static List<Double> doubles(JsonNode array) {
        List<Double> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asDouble()));
        return out;
    }
}
