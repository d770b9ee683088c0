package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Failure detection in a whole cluster (in this JVM): a worker paused for a second is not declared FAILED; a killed worker
 * is FAILED within a second and the system DEGRADED. Here the survivor cannot hold the model alone (each worker
 * offers room for half of its KV cache estimate), so no re-plan can do without the lost node: the state says so (need
 * against capacity), the coordinator reports not ready, and new work is refused. Restarted, the node heartbeats
 * again, is sent its stage again, reloads it, and the system is READY.
 */
class FailureDetectionIT {

    @TempDir
    Path work;

    /**
     * 1000 sequences of 256 positions make each layer's KV-cache estimate 64 MB: two layers and an end fit a worker
     * offering 200 MB, the four layers do not.
     */
    private static final String[] PLANNING = {"--butterfly.coordinator.planning.kv-cache-tokens=256",
            "--butterfly.coordinator.planning.kv-cache-sequences=1000",
            "--butterfly.coordinator.planning.activation-headroom=1MB"};

    @Test
    void killedWorkerIsFailedFastPausedWorkerIsNot() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_4, 5, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 2; i++) {
                cluster.startWorker(i, "--butterfly.worker.memory-limit=200MB");
            }
            cluster.startCoordinator(model.getFileName().toString(), 2, PLANNING);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString())
                    && "OPEN".equals(node(s, "worker-1").path("heartbeat_stream").asString()), Duration.ofMinutes(4));

            // A one-second pause (as SIGSTOP/SIGCONT): the connection stays open, phi stays under the threshold.
            long stoppedAt = System.currentTimeMillis();
            cluster.pause("worker-1");
            Thread.sleep(1_000);
            cluster.resume("worker-1");
            Thread.sleep(1_500);
            JsonNode afterPause = cluster.get("/api/v1/nodes/worker-1/state").json();
            assertThat(afterPause.path("state").asString()).as(afterPause.toString()).isEqualTo("READY");
            assertThat(afterPause.path("failed_at").isNull()).as(afterPause.toString()).isTrue();
            assertThat(cluster.get("/api/v1/system/state").json().path("system_state").asString()).isEqualTo("READY");
            assertThat(stoppedAt).isPositive();

            // Killed (as SIGKILL): FAILED within a second, the system DEGRADED, the failure visible in the state.
            long killedAt = System.currentTimeMillis();
            cluster.kill("worker-1");
            JsonNode degraded = cluster.awaitState(s -> "DEGRADED".equals(s.path("system_state").asString()),
                    Duration.ofSeconds(10));
            JsonNode failed = node(degraded, "worker-1");
            assertThat(failed.path("state").asString()).isEqualTo("FAILED");
            long failedAt = Instant.parse(failed.path("failed_at").asString()).toEpochMilli();
            assertThat(failedAt - killedAt).as("detection time").isBetween(0L, 1_000L);
            assertThat(Instant.parse(failed.path("last_heartbeat_at_verdict").asString()).toEpochMilli())
                    .isLessThanOrEqualTo(failedAt);
            assertThat(degraded.path("quorum").path("failed").asInt()).isEqualTo(1);
            JsonNode waiting = cluster.awaitState(st -> "WAITING_FOR_CAPACITY".equals(
                    st.path("recovery").path("phase").asString()), Duration.ofSeconds(30));
            assertThat(waiting.path("status_message").asString()).startsWith("InsufficientResources");
            assertThat(waiting.path("feasibility").path("required_bytes").asLong())
                    .isGreaterThan(waiting.path("feasibility").path("available_bytes").asLong());
            assertThat(waiting.path("epoch").asLong()).as("nothing was re-planned").isEqualTo(1);
            assertThat(cluster.get("/actuator/health/readiness").status()).as("cannot recover by itself: not ready")
                    .isEqualTo(503);
            assertThat(cluster.post("/api/v1/inference", "{\"prompt\": \"hi\", \"max_tokens\": 2}").status())
                    .as("no new work while DEGRADED").isEqualTo(409);

            // Restarted with the same id and address: it comes back, is sent its stage again and reloads it (the
            // capacity the re-plan waited for), and the system is READY in the same epoch.
            cluster.restart("worker-1");
            JsonNode back = cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()),
                    Duration.ofMinutes(3));
            JsonNode w1 = node(back, "worker-1");
            assertThat(w1.path("state").asString()).isEqualTo("READY");
            assertThat(Instant.parse(w1.path("recovered_at").asString()).toEpochMilli()).isGreaterThan(failedAt);
            assertThat(back.path("epoch").asLong()).isEqualTo(1);
            assertThat(back.path("last_recovery").path("lost_nodes").get(0).asString()).isEqualTo("worker-1");
            assertThat(cluster.get("/actuator/health/readiness").status()).isEqualTo(200);
            assertThat(cluster.post("/api/v1/inference", "{\"prompt\": \"hi\", \"max_tokens\": 2}").status())
                    .isEqualTo(200);
        }
    }

    private static JsonNode node(JsonNode state, String id) {
        for (JsonNode n : state.path("nodes")) {
            if (id.equals(n.path("id").asString())) {
                return n;
            }
        }
        return ClusterApi.JSON.createObjectNode();
    }
}
