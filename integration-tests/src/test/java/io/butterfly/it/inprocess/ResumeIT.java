package io.butterfly.it.inprocess;

import io.butterfly.common.api.WorkerStatus;
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
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A pipeline worker killed (as by SIGKILL, {@link InProcessCluster#kill}) while four streamed generations (greedy and seeded sampling) run through it: the
 * generations pause instead of failing; the leader re-plans (first the spare takes the lost stage, then, with no
 * spare left, the survivors take the next lost range), and once the new plan serves they replay their tokens into
 * new KV caches and finish with the tokens the same requests give without a failure. Each stream gives every token
 * once, in order, and the system is READY afterwards, without the killed nodes.
 */
class ResumeIT {

    private static final int TOKENS = 200;

    @TempDir
    Path work;

    @Test
    void fourStreamsThatLoseAWorkerFinishWithTheTokensOfARunWithoutTheFailure() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 4; i++) { // three stages and a spare
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            // Only the kills fail a node (a worker paused on a loaded machine is not declared FAILED for silence);
            // the paused generations wait as long as a loaded machine may take to load a re-planned stage.
            cluster.startCoordinator("tiny-llama", 3, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("spares").size() == 1, Duration.ofMinutes(8));
            List<String> pipeline = strings(ready.path("pipeline"));
            Random random = new Random(17);
            List<String> bodies = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                String prompt = random.longs(8 + random.nextInt(32), 3, 512).mapToObj(Long::toString)
                        .collect(Collectors.joining(", ", "[", "]"));
                bodies.add("{\"token_ids\": " + prompt + ", \"max_tokens\": " + TOKENS + ", \"ignore_eos\": true, "
                        + (i % 2 == 0 ? "\"temperature\": 0" : "\"temperature\": 0.8, \"seed\": " + random.nextInt()) + "}");
            }
            List<Future<JsonNode>> references = new ArrayList<>();
            for (String body : bodies) {
                references.add(clients.submit(() -> cluster.post("/api/v1/inference", body).json()));
            }
            List<List<Long>> expected = new ArrayList<>();
            for (Future<JsonNode> r : references) {
                expected.add(longs(r.get(5, TimeUnit.MINUTES).path("token_ids")));
            }

            // 1. A middle stage is lost: the spare takes its range (epoch 2).
            streamWhileKilling(cluster, clients, bodies, expected, pipeline.get(1));
            JsonNode s = cluster.awaitState(st -> ready(st) && st.path("paused_tasks").isEmpty(), Duration.ofMinutes(1));
            assertThat(s.path("epoch").asLong()).isEqualTo(2);
            assertThat(s.path("spares").isEmpty()).as("the spare took the stage").isTrue();
            assertThat(strings(s.path("pipeline"))).hasSize(3).doesNotContain(pipeline.get(1));
            // The first stage kept its caches: it answered the replays from what it sent the first time.
            assertThat(cluster.getFrom(pipeline.get(0), "/api/v1/worker/metrics").as(WorkerStatus.Metrics.class)
                    .replayedTokensAnswered()).as("%s answered the replayed histories without computing them", pipeline.get(0)).isPositive();

            // 2. No spare left: the last stage is lost and the survivors take its range (epoch 3).
            streamWhileKilling(cluster, clients, bodies, expected, pipeline.get(2));
            s = cluster.awaitState(st -> ready(st) && st.path("paused_tasks").isEmpty(), Duration.ofMinutes(1));
            assertThat(s.path("epoch").asLong()).isEqualTo(3);
            assertThat(strings(s.path("pipeline"))).hasSize(2).doesNotContain(pipeline.get(2));
        } finally {
            clients.shutdownNow();
        }
    }

    /**
     * Streams {@code bodies} at once, kills {@code victim} once every stream is under way, and checks that each
     * stream gives every token once, in order, the tokens of a run without the failure, and paused meanwhile.
     */
    private static void streamWhileKilling(InProcessCluster cluster, ExecutorService clients, List<String> bodies,
                                           List<List<Long>> expected, String victim) throws Exception {
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
        cluster.kill(victim);
        for (int i = 0; i < streams.size(); i++) {
            Stream s = streams.get(i).get(5, TimeUnit.MINUTES);
            assertThat(s.indices).as("stream %d: each token once, in order", i)
                    .containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
            assertThat(s.tokens).as("stream %d: the tokens of a run without the failure", i).isEqualTo(expected.get(i));
            assertThat(s.done).as("stream %d: its answer", i).isEqualTo(expected.get(i));
            assertThat(s.longestGapMs()).as("stream %d paused while %s was planned away", i, victim).isGreaterThan(200);
            System.out.printf("ResumeIT: %s killed: stream %d stalled %d ms%n", victim, i, s.longestGapMs());
        }
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }

    /** One stream's token events (their indices, tokens and arrival) and its answer's tokens. */
    private static final class Stream {
        private final CountDownLatch underWay;
        final List<Integer> indices = new ArrayList<>();
        final List<Long> tokens = new ArrayList<>();
        final List<Long> arrivals = new ArrayList<>();
        List<Long> done;

        Stream(CountDownLatch underWay) {
            this.underWay = underWay;
        }

        void onEvent(String name, String data) {
            JsonNode event = ClusterApi.JSON.readTree(data);
            if (name.equals("token")) {
                indices.add(event.path("index").asInt());
                tokens.add(event.path("token_id").asLong());
                arrivals.add(System.nanoTime());
                if (tokens.size() == 5) {
                    underWay.countDown();
                }
            } else if (name.equals("done")) {
                done = longs(event.path("token_ids"));
            } else {
                throw new AssertionError("unexpected " + name + " event: " + data);
            }
        }

        long longestGapMs() {
            long longest = 0;
            for (int i = 1; i < arrivals.size(); i++) {
                longest = Math.max(longest, arrivals.get(i) - arrivals.get(i - 1));
            }
            return longest / 1_000_000;
        }
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }

    static List<Long> longs(JsonNode array) {
        List<Long> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asLong()));
        return out;
    }
}
