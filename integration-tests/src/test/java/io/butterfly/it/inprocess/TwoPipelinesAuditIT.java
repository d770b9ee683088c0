package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.common.api.WorkerStatus;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.inference.audit.StepAuditor;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
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
 * Audits (docs/verified-execution.md#audits) with two pipelines, across the re-plan of one (issue #52 with issue 50's
 * audits), in this JVM. Five workers: two pipelines of one stage each (the tiny model fits a worker) and three spares,
 * the first of which recomputes every step of both pipelines (they hold the same layers, so they share an audit
 * pipeline) and the second referees. Every step is audited before sampling, so a step is used only once a second
 * worker computed the same bits.
 *
 * <p>Four streams run over both pipelines; the worker of the first pipeline is killed. A spare takes its stage in epoch
 * 2; the second pipeline is untouched, its worker holds on and its steps still carry epoch 1, while the audit pipeline
 * is assigned again in epoch 2. Every stream ends with the tokens of a run before the failure, each token once; and
 * after the re-plan, requests on both pipelines are served (each pipeline's worker computed served steps, which only
 * an agreed audit lets through) with the tokens of that run, and no audit disagreed or could not run once the audits
 * were placed for epoch 2.
 */
class TwoPipelinesAuditIT {

    private static final int TOKENS = 48;

    @TempDir
    Path work;

    @Test
    void bothPipelinesAreAuditedBeforeSamplingAcrossTheReplanOfOneAndNoWrongTokenReachesAClient() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        ExecutorService clients = Executors.newFixedThreadPool(8);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 5; i++) {
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 5, "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s",
                    "--butterfly.coordinator.planning.pipelines=2", "--butterfly.coordinator.planning.spares=3",
                    "--butterfly.coordinator.audit.fraction=1.0", "--butterfly.coordinator.audit.before-sampling=true",
                    "--butterfly.coordinator.audit.key=42");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("pipelines").size() == 2
                    && s.path("spares").size() == 3, Duration.ofMinutes(8));
            List<String> first = strings(ready.path("pipelines").get(0).path("stages"));
            List<String> second = strings(ready.path("pipelines").get(1).path("stages"));
            assertThat(first).hasSize(1);
            assertThat(second).hasSize(1);
            StepAuditor auditor = cluster.bean("coordinator", StepAuditor.class);

            Random random = new Random(5052);
            List<String> bodies = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                String prompt = random.longs(6 + random.nextInt(20), 3, 512).mapToObj(Long::toString)
                        .collect(Collectors.joining(", ", "[", "]"));
                bodies.add("{\"token_ids\": " + prompt + ", \"max_tokens\": " + TOKENS + ", \"ignore_eos\": true, "
                        + (i % 2 == 0 ? "\"temperature\": 0" : "\"temperature\": 0.8, \"seed\": " + random.nextInt()) + "}");
            }
            // The run before the failure (audited too: every step agreed on by two workers).
            List<List<Long>> expected = runAll(cluster, clients, bodies);
            StepAuditor.Counts before = auditor.counts();
            assertThat(before.agreed()).as("%s", before).isPositive();

            CountDownLatch underWay = new CountDownLatch(4);
            List<Future<List<Long>>> streams = new ArrayList<>();
            List<List<Integer>> indices = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                List<Integer> seen = new CopyOnWriteArrayList<>();
                indices.add(seen);
                String body = bodies.get(i);
                streams.add(clients.submit(() -> stream(cluster, body, seen, underWay)));
            }
            assertThat(underWay.await(3, TimeUnit.MINUTES)).as("every stream under way").isTrue();
            String victim = first.get(0);
            cluster.kill(victim);

            JsonNode replanned = cluster.awaitState(st -> ready(st) && st.path("epoch").asLong() >= 2
                    && st.path("pipelines").size() == 2, Duration.ofMinutes(5));
            assertThat(strings(replanned.path("pipelines").get(1).path("stages"))).isEqualTo(second);
            List<String> mended = strings(replanned.path("pipelines").get(0).path("stages"));
            assertThat(mended).doesNotContain(victim).hasSize(1);
            for (int i = 0; i < streams.size(); i++) {
                List<Long> tokens = streams.get(i).get(5, TimeUnit.MINUTES);
                assertThat(indices.get(i)).as("stream %d: each token once, in order", i)
                        .containsExactlyElementsOf(IntStream.range(0, TOKENS).boxed().toList());
                assertThat(tokens).as("stream %d: the tokens of the run before the failure", i)
                        .isEqualTo(expected.get(i));
            }
            long epoch = replanned.path("epoch").asLong();
            WorkerStatus kept = cluster.getFrom(second.get(0), "/api/v1/worker/state").as(WorkerStatus.class);
            assertThat(kept.epoch()).as(second.get(0)).isEqualTo(epoch);
            assertThat(kept.partition().loadedInEpoch()).as(second.get(0) + " held on: its steps carry epoch 1")
                    .isEqualTo(1);

            // After the re-plan: requests spread over both pipelines, every step audited before its token is used.
            // Rounds until the audits of the new epoch are in place (a round without an audit that could not run),
            // at most five: each round's tokens must be those of the run before the failure all the same.
            StepAuditor.Counts atRound = auditor.counts();
            double[] stepsBefore = stageSteps(cluster, mended.get(0), second.get(0));
            int rounds = 0;
            StepAuditor.Counts after;
            do {
                atRound = auditor.counts();
                assertThat(runAll(cluster, clients, bodies)).as("round %d after the re-plan", rounds)
                        .isEqualTo(expected);
                after = auditor.counts();
                rounds++;
            } while (after.unavailable() > atRound.unavailable() && rounds < 5);
            double[] stepsAfter = stageSteps(cluster, mended.get(0), second.get(0));
            System.out.printf("TwoPipelinesAuditIT: before the failure %s; after the re-plan (epoch %d, %d round(s)) %s;"
                    + " served steps since the re-plan: %s %.0f, %s %.0f%n", before, epoch, rounds, after,
                    mended.get(0), stepsAfter[0] - stepsBefore[0], second.get(0), stepsAfter[1] - stepsBefore[1]);
            assertThat(after.unavailable()).as("the last round: every audit ran (%s)", after)
                    .isEqualTo(atRound.unavailable());
            assertThat(after.agreed()).as("%s", after).isGreaterThan(atRound.agreed());
            assertThat(after.disputed()).as("%s", after).isZero();
            assertThat(after.evicted()).as("%s", after).isZero();
            assertThat(stepsAfter[0]).as("the mended pipeline (%s) served audited steps", mended.get(0))
                    .isGreaterThan(stepsBefore[0]);
            assertThat(stepsAfter[1]).as("the untouched pipeline (%s) served audited steps", second.get(0))
                    .isGreaterThan(stepsBefore[1]);
        } finally {
            clients.shutdownNow();
        }
    }

    /** The coordinator's count of served steps through each of {@code stages} (butterfly_stage_step_seconds). */
    private static double[] stageSteps(InProcessCluster cluster, String... stages) throws Exception {
        String metrics = cluster.get("/actuator/prometheus").body();
        double[] out = new double[stages.length];
        for (String line : metrics.split("\n")) {
            for (int i = 0; i < stages.length; i++) {
                if (line.startsWith("butterfly_stage_step_seconds_count{") && line.contains("stage=\"" + stages[i] + "\"")) {
                    out[i] = Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
                }
            }
        }
        return out;
    }

    private static List<List<Long>> runAll(InProcessCluster cluster, ExecutorService clients, List<String> bodies)
            throws Exception {
        List<Future<List<Long>>> answers = new ArrayList<>();
        for (String body : bodies) {
            answers.add(clients.submit(() -> {
                ClusterApi.Reply r = cluster.post("/api/v1/inference", body);
                assertThat(r.status()).as(r.body()).isEqualTo(200);
                return ResumeIT.longs(r.json().path("token_ids"));
            }));
        }
        List<List<Long>> out = new ArrayList<>();
        for (Future<List<Long>> a : answers) {
            out.add(a.get(5, TimeUnit.MINUTES));
        }
        return out;
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

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }
}
