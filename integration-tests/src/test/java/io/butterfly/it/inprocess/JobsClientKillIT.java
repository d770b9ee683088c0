package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.api.jobs.JobsServer;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Batch jobs with real client processes (docs/jobs.md): the C example (examples/jobs-client, compiled here) pulls 20
 * batches of a job from a coordinator and three workers (in this JVM: the process boundary that matters here is the
 * client's) over the JOBS port and answers each; the results endpoint returns each once. A second client process is
 * SIGKILLed while it waits for its batch (its lease taken), and once the lease has ended that batch goes to the next
 * client. (It ran the services as processes too until 2026-12-03, 105 s of the suite.)
 */
class JobsClientKillIT {

    /** Short, so that the killed client's batch comes back soon; the clients answer each batch at once. */
    private static final Duration LEASE = Duration.ofSeconds(5);

    private static final long SEED = 4242;

    @TempDir
    Path work;

    @Test
    void theCExamplePullsTwentyBatchesAndAKilledClientsBatchGoesToAnother() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        Path example = JobsIT.compileCClient(work);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.everyServiceWith("--butterfly.coordinator.jobs.enabled=true", "--butterfly.coordinator.jobs.port=0",
                    "--butterfly.coordinator.jobs.host=127.0.0.1",
                    "--butterfly.coordinator.jobs.lease=" + LEASE.toSeconds() + "s");
            cluster.startAll(model, 3);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
            int jobsPort = cluster.bean("coordinator", JobsServer.class).port();

            String dataset = IntStream.range(0, 60).mapToObj(i -> "{\"prompt\": \"prompt number " + i + "\"}")
                    .collect(Collectors.joining("\n"));
            var imported = cluster.send(HttpRequest.newBuilder(URI.create(cluster.coordinatorUrl()
                    + "/api/v1/jobs/datasets")).header("Content-Type", "application/x-ndjson")
                    .POST(HttpRequest.BodyPublishers.ofString(dataset)).build());
            assertThat(imported.status()).as(imported.body()).isEqualTo(201);
            var defined = cluster.post("/api/v1/jobs", """
                    {"id": "proc", "dataset_sha256": "%s", "batch_size": 3, "seed": %d, "max_tokens": 6}"""
                    .formatted(imported.json().path("sha256").asString(), SEED));
            assertThat(defined.status()).as(defined.body()).isEqualTo(201);

            // 20 batches of step 0, the coordinator choosing each, each answered
            String pulled = run(example, jobsPort, 0, String.valueOf(SEED), "0", "any", "ok", "20");
            assertThat(pulled.lines().filter(l -> l.equals("result stored")).count()).as(pulled).isEqualTo(20);
            List<JsonNode> lines = results(cluster);
            assertThat(lines).hasSize(20);
            assertThat(lines).extracting(l -> l.path("position").asLong())
                    .containsExactlyElementsOf(IntStream.range(0, 20).mapToObj(i -> 3L * i).toList());

            // a client killed while its batch (step 1) is leased to it; another gets the other batches meanwhile,
            // then, once the lease has ended, the killed one's
            Process killed = new ProcessBuilder(example.toString(), "127.0.0.1", String.valueOf(jobsPort),
                    String.valueOf(SEED), "1", "any").redirectErrorStream(true).start();
            awaitLeased(cluster);
            long leasedAt = System.nanoTime();
            killed.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            String others = run(example, jobsPort, 0, String.valueOf(SEED), "1", "any", "other", "19");
            // The killed client's batch is handed out again once its lease has ended: the lease's own time, nothing to
            // poll for. If it ended while the other client pulled, that one took it, and one other batch is left.
            Thread.sleep(Math.max(0, LEASE.plusSeconds(1).toMillis()
                    - TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - leasedAt)));
            String late = run(example, jobsPort, 0, String.valueOf(SEED), "1", "any", "late");
            assertThat(late).contains("result stored");
            if (!others.contains("step=1 position=0 ")) {
                assertThat(late).contains("batch seed=" + SEED + " step=1 position=0 samples=3");
            }
            assertThat(run(example, jobsPort, 2, String.valueOf(SEED), "1", "any")).contains("ERROR 13");
            assertThat(results(cluster)).hasSize(40);
            cluster.checkNoServiceDied();
        }
    }

    private static void awaitLeased(InProcessCluster cluster) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (System.nanoTime() < deadline) {
            if (cluster.get("/api/v1/jobs/proc").json().path("progress").path("leased").asLong() > 0) {
                return;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("the client's batch was never leased");
    }

    private static List<JsonNode> results(InProcessCluster cluster) throws Exception {
        var r = cluster.get("/api/v1/jobs/proc/results");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        List<JsonNode> out = new ArrayList<>();
        r.body().lines().forEach(l -> out.add(ClusterApi.JSON.readTree(l)));
        return out;
    }

    private static String run(Path example, int port, int expectedExit, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(example.toString(), "127.0.0.1", String.valueOf(port)));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor()).as(out).isEqualTo(expectedExit);
        return out;
    }
}
