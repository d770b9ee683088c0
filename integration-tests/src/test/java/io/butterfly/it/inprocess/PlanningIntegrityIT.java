package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.TinyModels;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Feasibility, the optimal planner under heterogeneous memory limits and cross-validation, in a whole cluster (in
 * this JVM): two small workers cannot hold the model (InsufficientResources in the state, no
 * assignment); once a third worker joins, the coordinator plans again and the optimal plan keeps each stage within its worker's memory, and the cluster is
 * READY only after the weights were cross-validated.
 */
class PlanningIntegrityIT {

    static final ModelConfig LLAMA = TinyModels.LLAMA_6;
    static final long HEADROOM = 4L << 20;
    static final int KV_TOKENS = 16;

    @TempDir
    Path work;

    @Test
    void infeasibleThenOptimalWithinHeterogeneousMemory() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(LLAMA, 7, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            Footprint f = awaitFootprint(cluster);
            // worker-0 holds one layer wherever it stands, worker-1 two; together not the six layers.
            long w0 = HEADROOM + f.largestEnd + f.largestLayer + 1000;
            long w1 = HEADROOM + f.largestEnd + 2 * f.largestLayer + 1000;
            cluster.startWorker(0, "--butterfly.worker.memory-limit=" + w0 + "B");
            cluster.startWorker(1, "--butterfly.worker.memory-limit=" + w1 + "B");
            String[] planning = {"--butterfly.coordinator.planner=optimal",
                    "--butterfly.coordinator.planning.activation-headroom=" + HEADROOM + "B",
                    "--butterfly.coordinator.planning.kv-cache-tokens=" + KV_TOKENS};
            cluster.startCoordinator("tiny-llama", 2, planning);

            JsonNode refused = cluster.awaitState(s -> s.path("feasibility").isObject(), Duration.ofMinutes(3));
            JsonNode feasibility = refused.path("feasibility");
            assertThat(feasibility.path("feasible").asBoolean()).isFalse();
            assertThat(feasibility.path("error_code").asString()).isEqualTo("InsufficientResources");
            assertThat(feasibility.path("planner").asString()).isEqualTo("optimal");
            assertThat(feasibility.path("required_bytes").asLong()).isGreaterThan(0);
            assertThat(refused.path("status_message").asString()).startsWith("InsufficientResources");
            assertThat(refused.path("system_state").asString()).isEqualTo("BOOTSTRAPPING");
            assertThat(refused.path("epoch").asLong()).isZero(); // no assignment was sent
            assertThat(refused.path("pipeline")).isEmpty();

            // More capacity joins: the coordinator plans again (docs/initialization-and-bootstrap.md §7.6) and this time assigns.
            cluster.startWorker(2); // no limit: the machine's memory
            JsonNode s = cluster.awaitState(st -> "READY".equals(st.path("system_state").asString()),
                    Duration.ofMinutes(5));
            assertThat(s.path("epoch").asLong()).isEqualTo(1);

            assertThat(s.path("feasibility").path("feasible").asBoolean()).isTrue();
            JsonNode v = s.path("weight_validation");
            assertThat(v.path("status").asString()).isEqualTo("VALID");
            assertThat(v.path("merkle_root").asString()).isEqualTo(s.path("merkle_root").asString());
            Map<String, Integer> counts = new HashMap<>();
            int next = 0;
            for (String id : iterable(s.path("pipeline"))) {
                JsonNode n = cluster.get("/api/v1/nodes/" + id + "/state").json();
                int start = n.path("layer_range").get(0).asInt();
                int end = n.path("layer_range").get(1).asInt();
                assertThat(start).as("contiguous").isEqualTo(next);
                next = end;
                counts.put(id, end - start);
                JsonNode load = n.path("load");
                assertThat(load.path("phase").asString()).isEqualTo("READY");
                assertThat(load.path("memory_used_bytes").asLong()).isPositive();
                assertThat(load.path("total_bytes").asLong()).isPositive();
                assertThat(load.path("warmup_success").asBoolean()).isTrue();
                assertThat(v.path("validated_nodes").toString()).contains(id);
            }
            assertThat(next).isEqualTo(LLAMA.numLayers());
            assertThat(counts.getOrDefault("worker-0", 0)).isLessThanOrEqualTo(1);
            assertThat(counts.getOrDefault("worker-1", 0)).isLessThanOrEqualTo(2);
            assertThat(counts.get("worker-2")).isGreaterThanOrEqualTo(3);

            ClusterApi.Reply r = cluster.post("/api/v1/inference", "{\"token_ids\": [1, 2, 3], \"max_tokens\": 2}");
            assertThat(r.status()).isEqualTo(200);
        }
    }

    private static Iterable<String> iterable(JsonNode array) {
        java.util.List<String> out = new java.util.ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }

    /** Per-layer and end-piece bytes as the coordinator estimates them (F32 shards + KV cache). */
    record Footprint(long largestLayer, long largestEnd) {
    }

    private static Footprint awaitFootprint(InProcessCluster cluster) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (true) {
            try {
                ClusterApi.Reply r = cluster.getFrom("registry", "/api/v1/models/tiny-llama");
                if (r.status() == 200) {
                    long kv = 2L * LLAMA.kvDim() * KV_TOKENS * Float.BYTES;
                    long layer = 0;
                    long ends = 0;
                    for (JsonNode file : r.json().path("files")) {
                        long size = file.path("size_bytes").asLong();
                        switch (file.path("kind").asString()) {
                            case "LAYER" -> layer = Math.max(layer, size + kv);
                            case "EMBEDDING", "HEAD" -> ends = Math.max(ends, size);
                            default -> { }
                        }
                    }
                    assertThat(layer).isPositive();
                    return new Footprint(layer, ends);
                }
            } catch (java.io.IOException e) {
                // not up yet
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("registry did not serve the model\n" + cluster.diagnostics());
            }
            Thread.sleep(500);
        }
    }
}
