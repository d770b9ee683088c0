package io.butterfly.it.inprocess;

import io.butterfly.common.api.WorkerStatus;
import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.generate.ModelGenerator;
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
 * Re-planning in a whole cluster (in this JVM): three workers and a spare serve a tiny Llama. A killed stage is planned away
 * in a higher epoch: the spare takes its range while the other stages are held on without loading, and READY comes
 * back without the failed node; with no spare left, a neighbour takes the next lost range. The killed worker,
 * restarted, joins as a spare. A drain moves a stage to that spare, then the drained node leaves the cluster; a drain
 * that would leave nothing to serve, or of an unknown node, is refused with a problem document. After every change
 * the same requests (greedy and seeded sampling) give the same tokens as before the first failure.
 */
class ReplanIT {

    private static final String GREEDY = "{\"token_ids\": [1, 17, 230, 5], \"max_tokens\": 12}";
    private static final String SAMPLED = "{\"token_ids\": [3, 99, 41], \"max_tokens\": 12, \"temperature\": 0.8, "
            + "\"top_p\": 0.9, \"seed\": 7}";

    @TempDir
    Path work;

    @Test
    void lostAndDrainedStagesArePlannedAwayAndTheSameRequestsGiveTheSameTokens() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_6, 7, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 4; i++) {
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            // Only the kills below may fail a node: a killed worker's closed stream fails it within 250 ms whatever
            // phi says, while a worker paused on a loaded machine is not declared FAILED for silence.
            cluster.startCoordinator("tiny-llama", 3, "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonNode ready = cluster.awaitState(s -> ready(s) && s.path("spares").size() == 1, Duration.ofMinutes(10));
            List<String> pipeline = strings(ready.path("pipeline"));
            String spare = ready.path("spares").get(0).asString();
            assertThat(pipeline).hasSize(3).doesNotContain(spare);
            JsonNode greedy = tokens(cluster, GREEDY);
            JsonNode sampled = tokens(cluster, SAMPLED);

            // 1. A middle stage is killed: the spare takes exactly its range, the others keep theirs (no reload).
            String lost = pipeline.get(1);
            cluster.kill(lost);
            JsonNode s = cluster.awaitState(st -> ready(st) && st.path("epoch").asLong() == 2, Duration.ofMinutes(2));
            assertThat(strings(s.path("pipeline"))).containsExactly(pipeline.get(0), spare, pipeline.get(2));
            assertThat(stage(s, 2, spare).path("layer_range")).isEqualTo(stage(s, 1, lost).path("layer_range"));
            assertThat(plan(s, 2).path("reason").asString()).startsWith(lost + " FAILED: spare " + spare + " takes");
            JsonNode recovery = s.path("last_recovery");
            assertThat(strings(recovery.path("lost_nodes"))).containsExactly(lost);
            assertThat(recovery.path("from_epoch").asLong()).isEqualTo(1);
            assertThat(recovery.path("to_epoch").asLong()).isEqualTo(2);
            report("kill, the spare takes the stage", s);
            assertThat(node(s, lost).path("state").asString()).isEqualTo("FAILED");
            for (String kept : List.of(pipeline.get(0), pipeline.get(2))) {
                WorkerStatus w = cluster.getFrom(kept, "/api/v1/worker/state").as(WorkerStatus.class);
                assertThat(w.epoch()).as(kept).isEqualTo(2);
                assertThat(w.partition().loadedInEpoch()).as(kept + " held on").isEqualTo(1);
            }
            assertSameTokens(cluster, greedy, sampled);

            // 2. No spare left: the last stage is killed and its neighbour takes its range and the head.
            String last = pipeline.get(2);
            cluster.kill(last);
            s = cluster.awaitState(st -> ready(st) && st.path("epoch").asLong() == 3, Duration.ofMinutes(2));
            assertThat(strings(s.path("pipeline"))).containsExactly(pipeline.get(0), spare);
            assertThat(stage(s, 3, spare).path("layer_range").get(1).asInt()).isEqualTo(TinyModels.LLAMA_6.numLayers());
            assertThat(stage(s, 3, spare).path("has_head").asBoolean()).isTrue();
            report("kill, a neighbour takes the stage", s);
            assertSameTokens(cluster, greedy, sampled);

            // 3. The first killed worker is started again: it comes back as a spare, the plan stays.
            long restarted = System.currentTimeMillis();
            cluster.restart(lost);
            s = cluster.awaitState(st -> strings(st.path("spares")).contains(lost), Duration.ofMinutes(3));
            assertThat(s.path("epoch").asLong()).isEqualTo(3);
            System.out.printf("ReplanIT: restarted worker back as a spare in %d ms%n", System.currentTimeMillis() - restarted);

            // 4. The first stage is drained: the spare takes it, then the drained node leaves the cluster.
            String drained = pipeline.get(0);
            ClusterApi.Reply drain = cluster.post("/api/v1/nodes/" + drained + "/drain", "");
            assertThat(drain.status()).as(drain.body()).isEqualTo(202);
            assertThat(drain.json().path("holds_stage").asBoolean()).isTrue();
            s = cluster.awaitState(st -> ready(st) && st.path("epoch").asLong() == 4
                    && !strings(st.path("draining")).contains(drained), Duration.ofMinutes(2));
            assertThat(strings(s.path("pipeline"))).containsExactly(lost, spare);
            assertThat(plan(s, 4).path("reason").asString()).startsWith(drained + " drained: spare " + lost + " takes");
            report("drain to the spare", s);
            assertThat(cluster.get("/api/v1/nodes/" + drained + "/state").status()).isEqualTo(404);
            WorkerStatus left = cluster.getFrom(drained, "/api/v1/worker/state").as(WorkerStatus.class);
            assertThat(left.joined()).as("left discovery").isFalse();
            assertThat(left.partition().modelId()).as("freed its partition").isNull();
            assertSameTokens(cluster, greedy, sampled);

            // 5. Refusals: an unknown node; the last worker, once a drain left one stage.
            ClusterApi.Reply unknown = cluster.post("/api/v1/nodes/no-such-worker/drain", "");
            assertThat(unknown.status()).isEqualTo(404);
            assertThat(unknown.contentType()).startsWith("application/problem+json");
            assertThat(cluster.post("/api/v1/nodes/" + spare + "/drain", "").status()).isEqualTo(202);
            s = cluster.awaitState(st -> ready(st) && st.path("pipeline").size() == 1 && st.path("draining").isEmpty(),
                    Duration.ofMinutes(2));
            ClusterApi.Reply refused = cluster.post("/api/v1/nodes/" + lost + "/drain", "");
            assertThat(refused.status()).as(refused.body()).isEqualTo(409);
            assertThat(refused.contentType()).startsWith("application/problem+json");
            assertThat(refused.json().path("detail").asString()).contains("no worker is left");
            assertThat(cluster.get("/api/v1/system/state").json().path("system_state").asString()).isEqualTo("READY");
            assertSameTokens(cluster, greedy, sampled);
        }
    }

    /** The recovery's duration as the state recorded it: from the committed loss to READY again. */
    private static void report(String what, JsonNode state) {
        System.out.printf("ReplanIT: %s: READY again in epoch %d after %d ms%n", what, state.path("epoch").asLong(),
                state.path("last_recovery").path("duration_ms").asLong());
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }

    private static JsonNode tokens(InProcessCluster cluster, String request) throws Exception {
        ClusterApi.Reply r = cluster.post("/api/v1/inference", request);
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return r.json().path("token_ids");
    }

    private static void assertSameTokens(InProcessCluster cluster, JsonNode greedy, JsonNode sampled) throws Exception {
        assertThat(tokens(cluster, GREEDY)).as("greedy").isEqualTo(greedy);
        assertThat(tokens(cluster, SAMPLED)).as("seeded sampling").isEqualTo(sampled);
    }

    private static JsonNode plan(JsonNode state, long epoch) {
        for (JsonNode p : state.path("plans")) {
            if (p.path("epoch").asLong() == epoch) {
                return p;
            }
        }
        throw new AssertionError("no plan of epoch " + epoch + " in " + state.path("plans"));
    }

    private static JsonNode stage(JsonNode state, long epoch, String nodeId) {
        for (JsonNode st : plan(state, epoch).path("stages")) {
            if (nodeId.equals(st.path("node_id").asString())) {
                return st;
            }
        }
        throw new AssertionError(nodeId + " holds no stage in epoch " + epoch);
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
