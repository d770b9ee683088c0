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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.CopyOnWriteArrayList;
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
    /** The untouched pipeline's largest gap between tokens, at most this many times its median gap ... */
    private static final double STALL_FACTOR = 10;
    /** ... or this long, if more (ms). */
    private static final long STALL_FLOOR_MS = 1_000;

    @TempDir
    Path work;

    @Test
    void killingAWorkerOfOnePipelineLeavesTheOtherServingAndTheFirstsRequestsResumeTokenIdentically() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(5); // four streams and the probes
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
            List<List<Long>> arrivals = new ArrayList<>(); // each stream's request sent, then each token's arrival (ns)
            for (String body : bodies) {
                List<Integer> seen = new ArrayList<>();
                List<Long> at = new ArrayList<>();
                indices.add(seen);
                arrivals.add(at);
                streams.add(clients.submit(() -> stream(cluster, body, seen, at, underWay)));
            }
            assertThat(underWay.await(2, TimeUnit.MINUTES)).as("every stream under way").isTrue();
            // Back-to-back streams of the first request until the failure is mended: some run on the untouched
            // pipeline across the epoch change whatever the router chose for the four above.
            AtomicBoolean mended = new AtomicBoolean();
            List<List<Long>> probeArrivals = new CopyOnWriteArrayList<>();
            Future<Integer> probes = clients.submit(() -> {
                int runs = 0;
                while (!mended.get()) {
                    List<Integer> seen = new ArrayList<>();
                    List<Long> at = new ArrayList<>();
                    List<Long> tokens = stream(cluster, bodies.get(0), seen, at, new CountDownLatch(0));
                    assertThat(tokens).as("probe %d: the tokens of a run without the failure", runs)
                            .isEqualTo(expected.get(0));
                    assertThat(seen).as("probe %d: each token once, in order", runs)
                            .containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
                    probeArrivals.add(at);
                    runs++;
                }
                return runs;
            });
            String victim = first.get(first.size() - 1);
            long killedAt = System.nanoTime();
            cluster.kill(victim);
            // The untouched pipeline serves while the other waits for the spare's load (its stages kept). Seen on the
            // way: when the re-plan's epoch first showed, and the last moment the first pipeline was surely not
            // serving (the poll before one that saw it down): no token of it arrives between the kill (and what was
            // in flight) and that moment.
            long[] seenAt = {0, killedAt, killedAt}; // epoch 2 first seen; last surely down; previous poll
            AtomicReference<JsonNode> meanwhile = new AtomicReference<>();
            cluster.awaitState(st -> {
                long now = System.nanoTime();
                boolean replanned = st.path("epoch").asLong() >= 2;
                if (replanned && seenAt[0] == 0) {
                    seenAt[0] = now;
                }
                boolean two = st.path("pipelines").size() == 2;
                boolean firstServes = two && st.path("pipelines").get(0).path("serving").asBoolean();
                if (two && "DEGRADED".equals(st.path("system_state").asString()) && !firstServes
                        && st.path("pipelines").get(1).path("serving").asBoolean()) {
                    meanwhile.set(st);
                }
                boolean mendedNow = replanned && firstServes;
                if (!mendedNow) {
                    seenAt[1] = seenAt[2];
                }
                seenAt[2] = now;
                return mendedNow;
            }, Duration.ofMinutes(4));
            assertThat(meanwhile.get()).as("the untouched pipeline serving while the other does not").isNotNull();
            assertThat(strings(meanwhile.get().path("pipelines").get(1).path("stages"))).isEqualTo(second);
            long epochChangeSeen = seenAt[0];
            long lastSeenDown = seenAt[1];

            mended.set(true);
            assertThat(probes.get(5, TimeUnit.MINUTES)).as("probes run").isPositive();
            for (int i = 0; i < streams.size(); i++) {
                List<Long> tokens = streams.get(i).get(5, TimeUnit.MINUTES);
                assertThat(indices.get(i)).as("stream %d: each token once, in order", i)
                        .containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
                assertThat(tokens).as("stream %d: the tokens of a run without the failure", i)
                        .isEqualTo(expected.get(i));
            }
            List<List<Long>> all = new ArrayList<>(arrivals);
            all.addAll(probeArrivals);
            untouchedPipelineDidNotStall(all, killedAt, epochChangeSeen, lastSeenDown);
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
        return stream(cluster, body, seen, new ArrayList<>(), underWay);
    }

    /** As above, with the request's start and then each token's arrival (System.nanoTime) added to {@code at}. */
    private static List<Long> stream(InProcessCluster cluster, String body, List<Integer> seen, List<Long> at,
                                     CountDownLatch underWay) throws Exception {
        at.add(System.nanoTime());
        List<Long> done = new ArrayList<>();
        new ResumableStream(List.of(cluster.coordinatorUrl() + "/api/v1/inference/stream"), Duration.ofMinutes(5),
                Duration.ofMinutes(5), notice -> { }).post(body, (name, data) -> {
                    JsonNode event = ClusterApi.JSON.readTree(data);
                    if (name.equals("token")) {
                        at.add(System.nanoTime());
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

    /**
     * The streams of the pipeline the failure did not touch (those with a token while the other could give none: a
     * second after the kill, for what was in flight, up to the last moment it was seen not serving) never wait much
     * longer than a step: their largest gap (the first token's latency included) stays within {@link #STALL_FACTOR}
     * times their median gap, or {@link #STALL_FLOOR_MS} on a machine so loaded that steps are that erratic anyway.
     * At least one of them runs from before the kill to after the re-plan's epoch was seen, across the epoch change.
     */
    private static void untouchedPipelineDidNotStall(List<List<Long>> streams, long killedAt, long epochChangeSeen,
                                                     long lastSeenDown) {
        long from = killedAt + TimeUnit.SECONDS.toNanos(1);
        List<List<Long>> untouched = streams.stream().filter(at -> at.stream()
                .anyMatch(t -> t > from && t < lastSeenDown)).toList();
        assertThat(untouched).as("streams on the untouched pipeline while the other was down").isNotEmpty();
        assertThat(untouched).as("a stream on the untouched pipeline across the epoch change")
                .anyMatch(at -> at.get(0) < killedAt && at.get(at.size() - 1) > epochChangeSeen);
        List<Long> gaps = new ArrayList<>();
        long largest = 0;
        for (List<Long> at : untouched) {
            for (int i = 1; i < at.size(); i++) {
                long gap = at.get(i) - at.get(i - 1);
                gaps.add(gap);
                largest = Math.max(largest, gap);
            }
        }
        java.util.Collections.sort(gaps);
        long median = gaps.get(gaps.size() / 2);
        double bound = Math.max(STALL_FACTOR * median, STALL_FLOOR_MS * 1e6);
        System.out.printf("untouched pipeline: %d streams, %d gaps, median %.1f ms, largest %.1f ms, bound %.1f ms"
                        + " (epoch change seen %.1f s after the kill)%n", untouched.size(), gaps.size(), median / 1e6,
                largest / 1e6, bound / 1e6, (epochChangeSeen - killedAt) / 1e9);
        assertThat((double) largest).as("largest gap between tokens of the untouched pipeline (median %.1f ms)",
                median / 1e6).isLessThanOrEqualTo(bound);
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
