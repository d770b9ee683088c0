package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.common.api.WorkerStatus;
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
 * Two pipelines over five workers (two stages each and a spare; docs/scale-out.md), in this JVM. Four streamed
 * generations run, spread by the router over both pipelines; a worker of one pipeline is killed (as by SIGKILL). Only
 * that pipeline is re-planned: the spare takes the lost stage, the other pipeline keeps its stages and its workers
 * hold on without loading, and it serves while the first recovers (system/state shows it serving while the system is
 * DEGRADED). Every stream, on either pipeline, finishes with the tokens of a run without the failure, each once.
 */
class TwoPipelinesIT {

    private static final int TOKENS = 120;

    @TempDir
    Path work;

    @Test
    void killingAWorkerOfOnePipelineLeavesTheOtherServingAndTheFirstsRequestsResumeTokenIdentically() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 5; i++) {
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 5, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s",
                    "--butterfly.coordinator.planning.pipelines=2", "--butterfly.coordinator.planning.spares=1");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("pipelines").size() == 2,
                    Duration.ofMinutes(8));
            List<String> first = strings(ready.path("pipelines").get(0).path("stages"));
            List<String> second = strings(ready.path("pipelines").get(1).path("stages"));
            assertThat(ready.path("spares")).hasSize(1);
            assertThat(first).doesNotContainAnyElementsOf(second);
            assertThat(ready.path("pipelines").get(0).path("serving").asBoolean()).isTrue();
            assertThat(ready.path("pipelines").get(1).path("serving").asBoolean()).isTrue();

            Random random = new Random(52);
            List<String> bodies = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                String prompt = random.longs(8 + random.nextInt(24), 3, 512).mapToObj(Long::toString)
                        .collect(Collectors.joining(", ", "[", "]"));
                bodies.add("{\"token_ids\": " + prompt + ", \"max_tokens\": " + TOKENS + ", \"ignore_eos\": true, "
                        + (i % 2 == 0 ? "\"temperature\": 0" : "\"temperature\": 0.8, \"seed\": " + random.nextInt()) + "}");
            }
            List<List<Long>> expected = new ArrayList<>();
            for (String body : bodies) {
                ClusterApi.Reply r = cluster.post("/api/v1/inference", body);
                assertThat(r.status()).as(r.body()).isEqualTo(200);
                expected.add(ResumeIT.longs(r.json().path("token_ids")));
            }

            CountDownLatch underWay = new CountDownLatch(bodies.size());
            List<Future<List<Long>>> streams = new ArrayList<>();
            List<List<Integer>> indices = new ArrayList<>();
            for (String body : bodies) {
                List<Integer> seen = new ArrayList<>();
                indices.add(seen);
                streams.add(clients.submit(() -> stream(cluster, body, seen, underWay)));
            }
            assertThat(underWay.await(2, TimeUnit.MINUTES)).as("every stream under way").isTrue();
            String victim = first.get(first.size() - 1);
            cluster.kill(victim);

            // The untouched pipeline serves while the other waits for the spare's load (its stages kept).
            JsonNode meanwhile = cluster.awaitState(st -> "DEGRADED".equals(st.path("system_state").asString())
                    && st.path("pipelines").size() == 2
                    && st.path("pipelines").get(1).path("serving").asBoolean()
                    && !st.path("pipelines").get(0).path("serving").asBoolean(), Duration.ofMinutes(2));
            assertThat(strings(meanwhile.path("pipelines").get(1).path("stages"))).isEqualTo(second);

            for (int i = 0; i < streams.size(); i++) {
                List<Long> tokens = streams.get(i).get(5, TimeUnit.MINUTES);
                assertThat(indices.get(i)).as("stream %d: each token once, in order", i)
                        .containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
                assertThat(tokens).as("stream %d: the tokens of a run without the failure", i)
                        .isEqualTo(expected.get(i));
            }
            JsonNode s = cluster.awaitState(st -> ready(st) && st.path("epoch").asLong() == 2
                    && st.path("paused_tasks").isEmpty(), Duration.ofMinutes(2));
            assertThat(strings(s.path("pipelines").get(1).path("stages"))).isEqualTo(second);
            assertThat(strings(s.path("pipelines").get(0).path("stages"))).doesNotContain(victim)
                    .contains(ready.path("spares").get(0).asString());
            assertThat(plan(s, 2).path("reason").asString()).startsWith(victim + " FAILED: pipeline 0: spare");
            for (String kept : second) {
                WorkerStatus w = cluster.getFrom(kept, "/api/v1/worker/state").as(WorkerStatus.class);
                assertThat(w.epoch()).as(kept).isEqualTo(2);
                assertThat(w.partition().loadedInEpoch()).as(kept + " held on").isEqualTo(1);
            }
            for (int i = 0; i < bodies.size(); i++) { // and the same requests again, on either pipeline
                ClusterApi.Reply r = cluster.post("/api/v1/inference", bodies.get(i));
                assertThat(ResumeIT.longs(r.json().path("token_ids"))).as("request %d after", i).isEqualTo(expected.get(i));
            }
        } finally {
            clients.shutdownNow();
        }
    }

    /**
     * The planner's count (pipelines = 0): two workers that each hold the model serve as two pipelines; a third joins
     * while a stream runs on them and becomes a third pipeline in a new epoch, the two serving pipelines keeping their
     * workers and stages (they hold on, caches kept) and the stream finishing with the tokens of an undisturbed run.
     */
    @Test
    void aJoiningWorkerAddsAPipelineWhileTheOthersKeepServing() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(1);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 2; i++) {
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 2, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.planning.pipelines=0");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("pipelines").size() == 2,
                    Duration.ofMinutes(8));
            List<List<String>> serving = List.of(strings(ready.path("pipelines").get(0).path("stages")),
                    strings(ready.path("pipelines").get(1).path("stages")));
            long epoch = ready.path("epoch").asLong();

            String body = "{\"token_ids\": [5, 17, 301, 42, 9, 77], \"max_tokens\": " + TOKENS
                    + ", \"ignore_eos\": true, \"temperature\": 0}";
            ClusterApi.Reply undisturbed = cluster.post("/api/v1/inference", body);
            assertThat(undisturbed.status()).as(undisturbed.body()).isEqualTo(200);
            List<Long> expected = ResumeIT.longs(undisturbed.json().path("token_ids"));
            // Streams one after the other until the new pipeline serves: those under way at the epoch change too.
            java.util.concurrent.atomic.AtomicBoolean grownSeen = new java.util.concurrent.atomic.AtomicBoolean();
            CountDownLatch underWay = new CountDownLatch(1);
            Future<Integer> streams = clients.submit(() -> {
                int runs = 0;
                boolean last = false;
                while (!last) {
                    last = grownSeen.get();
                    List<Integer> seen = new ArrayList<>();
                    List<Long> tokens = stream(cluster, body, seen, underWay);
                    assertThat(tokens).as("stream %d: the tokens of a run without the join", runs).isEqualTo(expected);
                    assertThat(seen).as("stream %d: each token once, in order", runs)
                            .containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
                    runs++;
                }
                return runs;
            });
            assertThat(underWay.await(2, TimeUnit.MINUTES)).as("a stream under way").isTrue();

            cluster.startWorker(2, cluster.sharedStoreOption());
            JsonNode grown = cluster.awaitState(s -> ready(s) && s.path("pipelines").size() == 3,
                    Duration.ofMinutes(5));
            assertThat(grown.path("epoch").asLong()).isEqualTo(epoch + 1);
            assertThat(strings(grown.path("pipelines").get(0).path("stages"))).isEqualTo(serving.get(0));
            assertThat(strings(grown.path("pipelines").get(1).path("stages"))).isEqualTo(serving.get(1));
            assertThat(strings(grown.path("pipelines").get(2).path("stages"))).containsExactly("worker-2");
            assertThat(grown.path("pipelines").get(2).path("serving").asBoolean()).isTrue();
            assertThat(plan(grown, epoch + 1).path("reason").asString()).isEqualTo("pipeline 2 added over worker-2"
                    + " (0 spares left)");
            for (List<String> kept : serving) {
                WorkerStatus w = cluster.getFrom(kept.get(0), "/api/v1/worker/state").as(WorkerStatus.class);
                assertThat(w.epoch()).as(kept.get(0)).isEqualTo(epoch + 1);
                assertThat(w.partition().loadedInEpoch()).as(kept.get(0) + " held on").isEqualTo(epoch);
            }

            grownSeen.set(true);
            assertThat(streams.get(5, TimeUnit.MINUTES)).as("streams run across the join").isGreaterThanOrEqualTo(2);
        } finally {
            clients.shutdownNow();
        }
    }

    /** A streamed generation, resumed across the failure; its token indices into {@code seen}, its answer's tokens out. */
    private static List<Long> stream(InProcessCluster cluster, String body, List<Integer> seen, CountDownLatch underWay)
            throws Exception {
        List<Long> done = new ArrayList<>();
        new ResumableStream(List.of(cluster.coordinatorUrl() + "/api/v1/inference/stream"), Duration.ofMinutes(5),
                Duration.ofMinutes(5), notice -> { }).post(body, (name, data) -> {
                    JsonNode event = ClusterApi.JSON.readTree(data);
                    if (name.equals("token")) {
                        seen.add(event.path("index").asInt());
                        if (seen.size() == 5) {
                            underWay.countDown();
                        }
                    } else if (name.equals("done")) {
                        done.addAll(ResumeIT.longs(event.path("token_ids")));
                    }
                });
        return done;
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }

    private static JsonNode plan(JsonNode state, long epoch) {
        for (JsonNode p : state.path("plans")) {
            if (p.path("epoch").asLong() == epoch) {
                return p;
            }
        }
        throw new AssertionError("no plan of epoch " + epoch + " in " + state);
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }
}
