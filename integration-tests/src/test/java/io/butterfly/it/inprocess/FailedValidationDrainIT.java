package io.butterfly.it.inprocess;

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
 * Issue 47: a model that failed validation never leaves the cluster stuck, in a whole cluster in this JVM. A worker
 * whose checksum report disagrees with the manifest (fault injection: it claims another digest for a file it loaded,
 * as a worker holding other bytes would) fails cross-validation: the verdict names it, the cluster stays short of READY
 * and refuses inference however long it waits. Draining that worker over REST is the way out: its stage is planned
 * away to the spare in a new epoch, validated afresh, and the cluster serves READY without it.
 */
class FailedValidationDrainIT {

    private static final String FAULTY = "worker-0";
    private static final String SPARE = "worker-1";
    private static final String REQUEST = "{\"token_ids\": [1, 17, 230, 5], \"max_tokens\": 4, \"ignore_eos\": true}";

    @TempDir
    Path work;

    @Test
    void aWorkerThatFailsCrossValidationIsDrainedAndTheClusterServesWithoutIt() throws Exception {
        Path model = work.resolve("tiny-llama");
        ModelGenerator.generate(TinyModels.LLAMA_6, 7, model);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            // The misreporting worker alone first, so that the first plan gives it the whole model.
            cluster.startWorker(0, cluster.sharedStoreOption(), "--butterfly.worker.unsafe-fault-injection.enabled=true",
                    "--butterfly.worker.unsafe-fault-injection.misreport-checksums=true");
            cluster.startCoordinator("tiny-llama", 1);

            JsonNode stalled = cluster.awaitState(s -> "INVALID".equals(s.path("weight_validation").path("status")
                    .asString()), Duration.ofMinutes(20));
            JsonNode verdict = stalled.path("weight_validation");
            assertThat(verdict.path("epoch").asLong()).isEqualTo(1);
            assertThat(strings(verdict.path("failed_nodes"))).containsExactly(FAULTY);
            assertThat(verdict.path("problems").toString()).contains(FAULTY + ": ").contains("the manifest says");
            assertThat(stalled.path("system_state").asString()).isEqualTo("BOOTSTRAPPING");

            // A spare joins; the verdict is final for the epoch: the cluster neither serves nor re-plans by itself.
            cluster.startWorker(1, cluster.sharedStoreOption());
            JsonNode waiting = cluster.awaitState(s -> strings(s.path("spares")).contains(SPARE), Duration.ofMinutes(10));
            assertThat(waiting.path("system_state").asString()).isEqualTo("BOOTSTRAPPING");
            assertThat(waiting.path("epoch").asLong()).isEqualTo(1);
            assertThat(strings(waiting.path("pipeline"))).containsExactly(FAULTY);
            ClusterApi.Reply refused = cluster.post("/api/v1/inference", REQUEST);
            assertThat(refused.status()).as(refused.body()).isEqualTo(409);
            assertThat(refused.contentType()).startsWith("application/problem+json");

            // The way out: drain the worker the verdict names.
            ClusterApi.Reply drain = cluster.post("/api/v1/nodes/" + FAULTY + "/drain", "");
            assertThat(drain.status()).as(drain.body()).isEqualTo(202);
            assertThat(drain.json().path("holds_stage").asBoolean()).isTrue();
            JsonNode ready = cluster.awaitState(s -> "READY".equals(s.path("system_state").asString())
                    && s.path("epoch").asLong() == 2, Duration.ofMinutes(10));
            assertThat(strings(ready.path("pipeline"))).containsExactly(SPARE);
            JsonNode valid = ready.path("weight_validation");
            assertThat(valid.path("epoch").asLong()).isEqualTo(2);
            assertThat(valid.path("status").asString()).isEqualTo("VALID");
            assertThat(strings(valid.path("validated_nodes"))).containsExactly(SPARE);

            ClusterApi.Reply served = cluster.post("/api/v1/inference", REQUEST);
            assertThat(served.status()).as(served.body()).isEqualTo(200);
            assertThat(served.json().path("token_ids").size()).isEqualTo(4);
        }
    }

    private static List<String> strings(JsonNode array) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asString()));
        return out;
    }
}
