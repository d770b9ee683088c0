package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Audits across a real process boundary (docs/verified-execution.md#audits): three workers, each its own JVM, of which
 * worker-0 flips one bit in 1 of 50 of its outputs and serves the model as one stage; the other two are spares, the
 * audit and the referee pipelines. With every step audited before sampling, worker-0 is evicted as Byzantine, and every
 * token any client was streamed equals the fault-free run's (the same requests once the healthy workers serve). The
 * in-process {@code AuditIT} covers the 10 % case and the counts; this is the shortest run that proves detection,
 * eviction and no wrong token across processes.
 */
class AuditProcessIT {

    private static final String FAULTY = "worker-0";

    @TempDir
    Path work;

    @Test
    void aWorkerProcessThatComputesWrongIsEvictedAndNoClientIsStreamedAWrongToken() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 7, model);
        try (LocalCluster cluster = new LocalCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            // The corrupting worker alone first, so that it is the one stage the first plan names.
            cluster.startWorker(0, cluster.sharedStoreOption(),
                    "--butterfly.worker.unsafe-fault-injection.enabled=true",
                    "--butterfly.worker.unsafe-fault-injection.flip-bit-fraction=0.02",
                    "--butterfly.worker.unsafe-fault-injection.seed=5");
            cluster.startCoordinator("tiny-llama", 1, "--butterfly.coordinator.audit.fraction=1",
                    "--butterfly.coordinator.audit.before-sampling=true", "--butterfly.coordinator.audit.key=42",
                    // a loaded machine must not have a worker declared lost, nor a replay given up while a spare
                    // loads the evicted worker's stage: the claim is about wrong computation, not recovery speed
                    // (the first CI run on a Zen 4 machine, beside another six-JVM process IT, gave up after PT1M)
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s",
                    "--butterfly.coordinator.engine.recovery-timeout=5m");
            cluster.awaitState(AuditProcessIT::ready, Duration.ofMinutes(5));
            cluster.startWorker(1, cluster.sharedStoreOption());
            cluster.startWorker(2, cluster.sharedStoreOption());
            cluster.awaitState(s -> ready(s) && s.path("spares").size() == 2, Duration.ofMinutes(5));

            // Rounds of four concurrent streamed requests until an audit catches worker-0 (about 50 of its outputs).
            List<String> requests = new ArrayList<>();
            List<List<Long>> streamed = new ArrayList<>();
            for (int round = 0; round < 30 && !byzantine(cluster.get("/api/v1/system/state").json()); round++) {
                List<String> batch = new ArrayList<>();
                for (int i = 0; i < 4; i++) {
                    int k = round * 4 + i;
                    batch.add(i % 2 == 0
                            ? "{\"token_ids\": [1, " + (17 + k % 200) + ", 230, 5], \"max_tokens\": 12}"
                            : "{\"token_ids\": [3, 99, " + (41 + k % 200) + "], \"max_tokens\": 12,"
                                    + " \"temperature\": 0.8, \"seed\": " + k + "}");
                }
                requests.addAll(batch);
                streamed.addAll(streamAll(cluster, batch));
            }
            JsonNode s = cluster.awaitState(AuditProcessIT::byzantine, Duration.ofMinutes(3));
            assertThat(node(s).path("state").asString()).isEqualTo("FAILED");
            assertThat(node(s).path("failure_cause").asString()).startsWith("Byzantine: step at position");

            // The fault-free run: the same requests on the healthy workers, once worker-0 is planned away.
            cluster.awaitState(st -> ready(st) && !st.path("pipeline").toString().contains(FAULTY),
                    Duration.ofMinutes(3));
            List<List<Long>> healthy = streamAll(cluster, requests);
            System.out.printf("AuditProcessIT: worker-0 evicted after %d requests (%d tokens streamed)%n",
                    requests.size(), streamed.stream().mapToInt(List::size).sum());
            assertThat(streamed).isEqualTo(healthy);
        }
    }

    /**
     * Streams each request (four at a time) and returns, per request, every token event its client received, in order;
     * each stream must end with {@code done} whose tokens are those same ones.
     */
    private static List<List<Long>> streamAll(LocalCluster cluster, List<String> requests) throws Exception {
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try {
            List<Future<List<Long>>> answers = new ArrayList<>();
            for (String body : requests) {
                answers.add(clients.submit(() -> {
                    List<Long> tokens = new ArrayList<>();
                    List<Long> done = new ArrayList<>();
                    ResumableStream.Outcome outcome = new ResumableStream(
                            List.of(cluster.coordinatorUrl() + "/api/v1/inference/stream"), Duration.ofMinutes(5),
                            Duration.ofMinutes(5), notice -> { }).post(body, (name, data) -> {
                                JsonNode event = ClusterApi.JSON.readTree(data);
                                switch (name) {
                                    case "token" -> tokens.add(event.path("token_id").asLong());
                                    case "done" -> event.path("token_ids").forEach(t -> done.add(t.asLong()));
                                    default -> throw new AssertionError("unexpected " + name + " event: " + data);
                                }
                            });
                    assertThat(outcome.status()).as(outcome.body()).isEqualTo(200);
                    assertThat(tokens).as(body).isEqualTo(done).isNotEmpty();
                    return tokens;
                }));
            }
            List<List<Long>> out = new ArrayList<>();
            for (Future<List<Long>> a : answers) {
                out.add(a.get());
            }
            return out;
        } finally {
            clients.shutdownNow();
        }
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }

    private static boolean byzantine(JsonNode s) {
        return node(s).path("byzantine").asBoolean();
    }

    private static JsonNode node(JsonNode state) {
        for (JsonNode n : state.path("nodes")) {
            if (FAULTY.equals(n.path("id").asString())) {
                return n;
            }
        }
        return ClusterApi.JSON.createObjectNode();
    }
}
