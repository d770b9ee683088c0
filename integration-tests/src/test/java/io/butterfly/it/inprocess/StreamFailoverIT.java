package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Three coordinator replicas; the one serving a streamed generation (the Raft leader, the hardest case: the group
 * elects another before anything commits) is killed mid-stream (as by SIGKILL: {@link InProcessCluster#kill}; the
 * process-level coordinator kill is CoordinatorFailoverIT's). The client picks the stream up at another replica
 * with {@code Last-Event-ID} (as {@code ./butterfly generate --stream} does): that replica takes the task over,
 * replays its recorded tokens and streams the rest, each token once, the tokens of a run without the failure. A
 * non-streaming request with an {@code Idempotency-Key} that was running on the killed replica, repeated at the
 * others, answers that same generation, never a second.
 */
class StreamFailoverIT {

    private static final int TOKENS = 200;
    private static final List<String> REPLICAS = List.of("coordinator", "coordinator-1", "coordinator-2");

    @TempDir
    Path work;

    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    @Test
    void aStreamWhoseCoordinatorDiesGoesOnAtAnotherReplicaAndARepeatedRequestGetsTheSameGeneration() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(2);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            cluster.startWorker(0);
            cluster.startWorker(1);
            cluster.startCoordinatorGroup("tiny-llama", 2, 3, "--butterfly.coordinator.engine.recovery-timeout=5m");
            String leader = awaitLeaderServing(cluster);
            String leaderId = state(cluster, leader).path("raft").path("self_id").asString();
            List<String> others = REPLICAS.stream().filter(r -> !r.equals(leader)).toList();

            String streamed = "{\"token_ids\": [1, 17, 230, 5, 99, 4], \"max_tokens\": " + TOKENS
                    + ", \"ignore_eos\": true, \"temperature\": 0.8, \"seed\": 11}";
            String keyed = "{\"token_ids\": [7, 8, 9], \"max_tokens\": " + TOKENS + ", \"ignore_eos\": true}";
            List<Long> streamedRef = ResumeIT.longs(post(cluster, others.get(0), streamed, null).path("token_ids"));
            List<Long> keyedRef = ResumeIT.longs(post(cluster, others.get(1), keyed, null).path("token_ids"));

            CountDownLatch underWay = new CountDownLatch(1);
            List<Integer> indices = new ArrayList<>();
            List<Long> tokens = new ArrayList<>();
            List<List<Long>> done = new ArrayList<>();
            Future<ResumableStream.Outcome> stream = clients.submit(() -> new ResumableStream(
                    ResumableStream.at(cluster.urlOf(leader), others.stream().map(cluster::urlOf).toList(),
                            "/api/v1/inference/stream"), Duration.ofMinutes(5), Duration.ofMinutes(5), notice -> { })
                    .post(streamed, (name, data) -> {
                        JsonNode event = ClusterApi.JSON.readTree(data);
                        if (name.equals("token")) {
                            indices.add(event.path("index").asInt());
                            tokens.add(event.path("token_id").asLong());
                            if (tokens.size() == 10) {
                                underWay.countDown();
                            }
                        } else if (name.equals("done")) {
                            done.add(ResumeIT.longs(event.path("token_ids")));
                        } else {
                            throw new AssertionError(name + " event: " + data);
                        }
                    }));
            Future<JsonNode> lost = clients.submit(() -> post(cluster, leader, keyed, "order-1"));
            assertThat(underWay.await(2, TimeUnit.MINUTES)).isTrue();
            cluster.kill(leader);

            ResumableStream.Outcome outcome = stream.get(5, TimeUnit.MINUTES);
            assertThat(outcome.status()).isEqualTo(200);
            assertThat(outcome.reconnects()).isPositive();
            assertThat(indices).as("each token once, in order").containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
            assertThat(tokens).as("the tokens of a run without the failure").isEqualTo(streamedRef);
            assertThat(done).containsExactly(streamedRef);

            try {
                lost.get(1, TimeUnit.MINUTES); // its replica died under it: the client repeats it elsewhere
            } catch (java.util.concurrent.ExecutionException expected) {
                // the connection dropped, or the dying replica answered 503 (its task start never committed)
                assertThat(expected.getCause()).satisfiesAnyOf(
                        e -> assertThat(e).isInstanceOf(IOException.class),
                        e -> assertThat(e).isInstanceOf(AssertionError.class).hasMessageContaining("\"status\":503"));
            }
            JsonNode repeated = post(cluster, others.get(0), keyed, "order-1");
            assertThat(ResumeIT.longs(repeated.path("token_ids"))).isEqualTo(keyedRef);
            JsonNode again = post(cluster, others.get(1), keyed, "order-1");
            assertThat(again.path("task_id")).isEqualTo(repeated.path("task_id"));
            assertThat(again.path("token_ids")).isEqualTo(repeated.path("token_ids"));

            JsonNode tasks = cluster.getFrom(others.get(0), "/api/v1/tasks").json();
            long keyedTasks = 0;
            for (JsonNode t : tasks) {
                keyedTasks += "order-1".equals(t.path("idempotency_key").asString()) ? 1 : 0;
            }
            assertThat(keyedTasks).as("one generation for the key").isEqualTo(1);
            String streamTask = streamTaskId(tasks, streamedRef);
            JsonNode moved = cluster.awaitTaskEnded(others.get(0), streamTask);
            assertThat(moved.path("state").asString()).isEqualTo("COMPLETED");
            assertThat(moved.path("owner").asString()).as("taken over from the dead replica").isNotEqualTo(leaderId);
        } finally {
            clients.shutdownNow();
        }
    }

    /** The task that generated {@code tokens} apart from the reference run (the one resumed after the kill). */
    private static String streamTaskId(JsonNode tasks, List<Long> tokens) {
        String found = null;
        for (JsonNode t : tasks) {
            if (ResumeIT.longs(t.path("token_ids")).equals(tokens) && !"".equals(t.path("owner").asString())) {
                found = t.path("task_id").asString(); // the last one listed: the reference came first
            }
        }
        return found;
    }

    private JsonNode post(InProcessCluster cluster, String replica, String body, String idempotencyKey) throws Exception {
        HttpRequest.Builder r = HttpRequest.newBuilder(URI.create(cluster.urlOf(replica) + "/api/v1/inference"))
                .timeout(Duration.ofMinutes(5)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (idempotencyKey != null) {
            r.header("Idempotency-Key", idempotencyKey);
        }
        // A replica asked right after READY that does not hold the model yet fetches it then (no 503 to retry).
        HttpResponse<String> response = http.send(r.build(), HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return ClusterApi.JSON.readTree(response.body());
    }

    /** The leader, once every replica answers and serves READY. */
    private static String awaitLeaderServing(InProcessCluster cluster) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofMinutes(8).toNanos(); // seven JVMs start on two cores
        while (System.nanoTime() < deadline) {
            String leader = null;
            int ready = 0;
            for (String r : REPLICAS) {
                JsonNode s = state(cluster, r);
                if (s != null && "READY".equals(s.path("system_state").asString())) {
                    ready++;
                    leader = "LEADER".equals(s.path("raft").path("role").asString()) ? r : leader;
                }
            }
            if (ready == REPLICAS.size() && leader != null) {
                return leader;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("no replica leads a READY system:\n" + cluster.diagnostics());
    }

    private static JsonNode state(InProcessCluster cluster, String replica) {
        try {
            ClusterApi.Reply r = cluster.getFrom(replica, "/api/v1/system/state");
            return r.status() == 200 ? r.json() : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
