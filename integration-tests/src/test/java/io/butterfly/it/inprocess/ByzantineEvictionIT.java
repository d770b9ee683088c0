package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.cluster.ClusterCommand;
import io.butterfly.coordinator.control.ControlLog;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A Byzantine verdict evicts a serving worker (docs/verified-execution.md#audits), in a whole cluster in this JVM: two
 * stages and a spare serve a tiny Llama; the verdict an audit commits ({@code NodeByzantine}, committed here on the
 * leader's control log; AuditIT shows audits reaching it) makes the stage's node FAILED with its
 * Byzantine cause in system/state, the spare takes its range in the next epoch, the evicted node stays FAILED though
 * it still heartbeats, and the same requests give the same tokens as before.
 */
class ByzantineEvictionIT {

    private static final String GREEDY = "{\"token_ids\": [1, 17, 230, 5], \"max_tokens\": 12}";
    private static final String SAMPLED = "{\"token_ids\": [3, 99, 41], \"max_tokens\": 12, \"temperature\": 0.8, "
            + "\"top_p\": 0.9, \"seed\": 7}";

    @TempDir
    Path work;

    @Test
    void aByzantineStageIsEvictedPlannedAwayAndNeverBack() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_6, 7, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 3; i++) {
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("tiny-llama", 2, "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("spares").size() == 1, Duration.ofMinutes(10));
            List<String> pipeline = strings(ready.path("pipeline"));
            String spare = ready.path("spares").get(0).asString();
            JsonNode greedy = tokens(cluster, GREEDY);
            JsonNode sampled = tokens(cluster, SAMPLED);

            String evicted = pipeline.get(0);
            String cause = "step 3 of task t, layers [0, 3): " + evicted + " computed seq=00000000000000aa; auditor "
                    + spare + " computed seq=00000000000000bb; referee computed seq=00000000000000bb";
            cluster.bean("coordinator", ControlLog.class)
                    .submit(new ClusterCommand.NodeByzantine(evicted, cause, System.currentTimeMillis()));

            JsonNode s = cluster.awaitState(st -> ready(st) && st.path("epoch").asLong() == 2, Duration.ofMinutes(3));
            assertThat(strings(s.path("pipeline"))).containsExactly(spare, pipeline.get(1));
            JsonNode node = node(s, evicted);
            assertThat(node.path("state").asString()).isEqualTo("FAILED");
            assertThat(node.path("byzantine").asBoolean()).isTrue();
            assertThat(node.path("failure_cause").asString()).isEqualTo("Byzantine: " + cause);
            assertThat(node.path("standing").asString()).isEqualTo("none");
            assertThat(plan(s, 2).path("reason").asString())
                    .startsWith(evicted + " FAILED (Byzantine): spare " + spare + " takes");
            assertThat(tokens(cluster, GREEDY)).as("greedy").isEqualTo(greedy);
            assertThat(tokens(cluster, SAMPLED)).as("seeded sampling").isEqualTo(sampled);

            // It still heartbeats (its stream is open), but the failure detector does not bring it back.
            JsonNode later = cluster.awaitState(st -> "OPEN".equals(node(st, evicted).path("heartbeat_stream").asString()),
                    Duration.ofMinutes(1));
            assertThat(node(later, evicted).path("state").asString()).isEqualTo("FAILED");
            assertThat(strings(later.path("spares"))).doesNotContain(evicted);
            System.out.printf("ByzantineEvictionIT: READY again in epoch 2 after %d ms%n",
                    s.path("last_recovery").path("duration_ms").asLong());
        }
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }

    private static JsonNode tokens(InProcessCluster cluster, String request) throws Exception {
        ClusterApi.Reply r = cluster.post("/api/v1/inference", request);
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return r.json().path("token_ids");
    }

    private static JsonNode plan(JsonNode state, long epoch) {
        for (JsonNode p : state.path("plans")) {
            if (p.path("epoch").asLong() == epoch) {
                return p;
            }
        }
        throw new AssertionError("no plan of epoch " + epoch + " in " + state.path("plans"));
    }

    private static JsonNode node(JsonNode state, String id) {
        for (JsonNode n : state.path("nodes")) {
            if (id.equals(n.path("id").asString())) {
                return n;
            }
        }
        return ClusterApi.JSON.createObjectNode();
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }
}
