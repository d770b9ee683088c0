package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.api.TaskTranscript;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;

/**
 * Verified execution (docs/verified-execution.md) on the services in one JVM: a request's transcript digest is the
 * same on 1, 2, 3 and 4 workers and whatever it is batched with, every step names each stage's hash, and a stage of
 * another precision contract refuses the step with CONTRACT_MISMATCH instead of computing it.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class VerifiedExecutionIT {

    private static final ModelConfig CONFIG = new ModelConfig(Architecture.GPT2, 4, 64, 4, 4, 256, 300, 128, 1e-5, 0,
            true, 0, 0);
    private static final String GREEDY = """
            {"token_ids": [3, 141, 59, 26, 53, 58, 97, 93], "max_tokens": 8, "temperature": 0, "seed": 1}""";
    private static final String SAMPLED = """
            {"token_ids": [3, 141, 59, 26, 53, 58, 97, 93], "max_tokens": 8, "temperature": 1.0, "seed": 1234}""";
    private static final String OTHER = """
            {"token_ids": [7, 7, 8, 1, 200, 201, 17, 5, 9, 44, 45, 46, 47], "max_tokens": 6, "temperature": 0.7, "seed": 5}""";
    /** Each request's digest as the first cluster computed it: every other must equal it. */
    private static final Map<String, String> DIGESTS = new ConcurrentHashMap<>();

    @TempDir
    Path work;

    @Order(1)
    @ParameterizedTest(name = "{0} worker(s)")
    @ValueSource(ints = {1, 2, 3, 4})
    void theDigestIsTheSameOnAnySplitAndUnderBatching(int workers) throws Exception {
        Path model = work.resolve("model");
        ModelGenerator.generate(CONFIG, 11, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startAll(model, workers);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));

            TaskTranscript alone = transcript(cluster, run(cluster, GREEDY));
            assertThat(alone.links()).hasSize(8);
            assertThat(alone.steps()).allSatisfy(step -> assertThat(step.stages()).hasSize(workers));
            // the last stage's hash of the row each token was sampled from is the link's
            List<String> lastStage = alone.steps().stream()
                    .map(s -> s.stages().get(workers - 1).outputHash()).filter(h -> !h.equals("0000000000000000")).toList();
            assertThat(lastStage).isEqualTo(alone.links().stream().map(TaskTranscript.Link::logitsHash).toList());
            assertThat(alone.steps()).allSatisfy(step -> assertThat(step.stages())
                    .allSatisfy(st -> assertThat(st.contract()).isEqualTo("F32/FLOAT32/INT8")));

            // batched with others, twice each, at once
            List<String> requests = List.of(GREEDY, SAMPLED, OTHER, GREEDY, SAMPLED, OTHER);
            ExecutorService clients = Executors.newFixedThreadPool(requests.size());
            try {
                List<Future<JsonNode>> answers = new ArrayList<>();
                for (String r : requests) {
                    answers.add(clients.submit(() -> run(cluster, r)));
                }
                for (int i = 0; i < requests.size(); i++) {
                    String digest = transcript(cluster, answers.get(i).get()).digest();
                    assertThat(digest).as("%s on %d worker(s)", requests.get(i), workers)
                            .isEqualTo(DIGESTS.computeIfAbsent(requests.get(i), k -> digest));
                }
            } finally {
                clients.shutdownNow();
            }
            assertThat(alone.digest()).isEqualTo(DIGESTS.get(GREEDY));
        }
    }

    @Order(2)
    @Test
    void aStageOfAnotherPrecisionContractRefusesTheStep() throws Exception {
        Path model = work.resolve("model");
        ModelGenerator.generate(CONFIG, 11, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startAll(model, 2, i -> i == 1 ? new String[]{"--butterfly.worker.activations=F32"} : new String[0]);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));

            ClusterApi.Reply r = cluster.post("/api/v1/inference", GREEDY);

            assertThat(r.status()).as(r.body()).isEqualTo(502);
            assertThat(r.json().path("error_code").asString()).isEqualTo("CONTRACT_MISMATCH");
            assertThat(r.json().path("detail").asString()).contains("worker-0", "activations INT8", "activations F32");
            cluster.checkNoServiceDied();
        }
    }

    /** A worker that flips a bit in every output computes another generation: its transcript's digest tells. */
    @Order(3)
    @Test
    void aWorkerThatCorruptsItsOutputsChangesTheDigest() throws Exception {
        Path model = work.resolve("model");
        ModelGenerator.generate(CONFIG, 11, model);
        // the healthy digest: the one every split gave above (a cluster of its own when this case runs alone)
        String healthy = DIGESTS.get(GREEDY);
        if (healthy == null) {
            try (InProcessCluster cluster = new InProcessCluster(work.resolve("healthy"))) {
                cluster.startAll(model, 2);
                cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
                healthy = transcript(cluster, run(cluster, GREEDY)).digest();
            }
        }
        try (InProcessCluster cluster = new InProcessCluster(work.resolve("faulty"))) {
            cluster.startAll(model, 2, i -> i == 0 ? new String[]{"--butterfly.worker.unsafe-fault-injection.enabled=true",
                    "--butterfly.worker.unsafe-fault-injection.flip-bit-fraction=1"} : new String[0]);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
            // the next stage finds each input as reported (its hash is the corrupted output's): the step runs
            TaskTranscript faulty = transcript(cluster, run(cluster, GREEDY));
            assertThat(faulty.digest()).isNotEqualTo(healthy);
            assertThat(cluster.bean("worker-0", io.butterfly.worker.pipeline.PipelineStage.class).outputsCorrupted())
                    .isPositive();
        }
    }

    private static JsonNode run(InProcessCluster cluster, String request) throws Exception {
        ClusterApi.Reply r = cluster.post("/api/v1/inference", request);
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return r.json();
    }

    private static TaskTranscript transcript(InProcessCluster cluster, JsonNode answer) throws Exception {
        String id = answer.path("task_id").asString();
        cluster.awaitTaskEnded("coordinator", id);
        ClusterApi.Reply r = cluster.get("/api/v1/tasks/" + id + "/transcript");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        TaskTranscript t = r.as(TaskTranscript.class);
        List<Long> tokens = new ArrayList<>();
        answer.path("token_ids").forEach(n -> tokens.add(n.asLong()));
        assertThat(t.links().stream().map(TaskTranscript.Link::tokenId).toList()).isEqualTo(tokens);
        return t;
    }
}
