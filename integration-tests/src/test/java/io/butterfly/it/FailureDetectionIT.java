package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.process.Signal;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Failure detection across real processes: a worker paused for a second is not declared FAILED; a
 * SIGKILLed worker is FAILED within a second and the system DEGRADED; restarted, it heartbeats again,
 * reloads its stage and the system is READY again.
 */
class FailureDetectionIT {

    static final ModelConfig LLAMA = new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 160, 512, 256,
            1e-5, 10000.0, false, 1, 2);

    @TempDir
    Path work;

    @Test
    void killedWorkerIsFailedFastPausedWorkerIsNot() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(LLAMA, 5, model);
        try (LocalCluster cluster = new LocalCluster(work)) {
            cluster.startAll(model, 2);
            cluster.awaitState(s -> "READY".equals(s.path("system_state").asString())
                    && "OPEN".equals(node(s, "worker-1").path("heartbeat_stream").asString()), Duration.ofMinutes(4));

            // A one-second pause (SIGSTOP/SIGCONT): the connection stays open, phi stays under the threshold.
            long stoppedAt = System.currentTimeMillis();
            cluster.signal("worker-1", Signal.STOP);
            Thread.sleep(1_000);
            cluster.signal("worker-1", Signal.CONT);
            Thread.sleep(1_500);
            JsonNode afterPause = cluster.get("/api/v1/nodes/worker-1/state").json();
            assertThat(afterPause.path("state").asString()).as(afterPause.toString()).isEqualTo("READY");
            assertThat(afterPause.path("failed_at").isNull()).as(afterPause.toString()).isTrue();
            assertThat(cluster.get("/api/v1/system/state").json().path("system_state").asString()).isEqualTo("READY");
            assertThat(stoppedAt).isPositive();

            // SIGKILL: FAILED within a second, the system DEGRADED, the failure visible in the state.
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
            assertThat(cluster.post("/api/v1/inference", "{\"prompt\": \"hi\", \"max_tokens\": 2}").status())
                    .as("no new work while DEGRADED").isEqualTo(409);

            // Restarted with the same id and address: it comes back, reloads its stage, the system is READY.
            cluster.restart("worker-1");
            JsonNode back = cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()),
                    Duration.ofMinutes(3));
            JsonNode w1 = node(back, "worker-1");
            assertThat(w1.path("state").asString()).isEqualTo("READY");
            assertThat(Instant.parse(w1.path("recovered_at").asString()).toEpochMilli()).isGreaterThan(failedAt);
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
        return LocalCluster.JSON.createObjectNode();
    }
}
