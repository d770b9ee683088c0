package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.SingleProcessReference;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A dense Llama model whose one stage the coordinator splits by attention heads over two workers
 * ({@code butterfly.coordinator.planning.head-shards=2}; docs/sharding.md, "Head parallelism"): the stage's worker
 * computes slices [0, 2) and asks the other worker for slices [2, 4) of every layer's halves over
 * WorkerService.Heads; greedy generation gives the tokens of one process computing whole layers, alone and four
 * requests at once. Each in-process worker computes on its own engine thread (a bean of its context), so the stage's
 * step waiting for the other shard's answer never waits for its own thread. Then the worker of shard 1 is killed
 * mid-stream: the spare takes its slices and the stream ends with the tokens of a run without the failure; then the
 * spare is killed too, and with no spare left the stage is planned anew on the worker left, whole layers.
 */
class HeadShardsClusterIT {

    private static final int TOKENS = 16;

    @TempDir
    Path work;

    @Test
    void twoHeadShardsGiveTheTokensOfOneProcess() throws Exception {
        // 8 query heads over 4 key/value heads: 4 slices, two per shard.
        ModelConfig config = new ModelConfig(Architecture.LLAMA, 2, 64, 8, 4, 96, 300, 256, 1e-6, 500000.0, false, 1, 2);
        Path model = work.resolve("llama-heads-model");
        ModelGenerator.generate(config, 13, model);
        String modelId = model.getFileName().toString();
        Random random = new Random(29);
        List<long[]> prompts = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            prompts.add(random.longs(3 + random.nextInt(10), 3, 300).toArray());
        }
        // The references before the cluster starts, from one load (docs/testing.md, "A reference beside the
        // in-process workers").
        List<List<Long>> expected = SingleProcessReference.generateEach(model, prompts, TOKENS,
                new SamplingParams(0.0, 1.0, 0, 0)).stream().map(SingleProcessReference.Generation::tokens).toList();
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 3; i++) { // two head shards and a spare
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator(modelId, 2, "--butterfly.coordinator.planning.head-shards=2",
                    "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonNode state = cluster.awaitState(s -> ready(s) && s.path("spares").size() == 1, Duration.ofMinutes(8));
            assertThat(state.path("pipeline").size()).as(state.toString()).isEqualTo(1);
            JsonNode shards = currentStage(state).path("expert_groups");
            assertThat(shards.size()).as(state.toString()).isEqualTo(2);
            assertThat(shards.get(0).path("node_id").asString()).isEqualTo(state.path("pipeline").get(0).asString());
            assertThat(shards.get(0).path("experts").toString()).isEqualTo("[0,2]");
            assertThat(shards.get(1).path("experts").toString()).isEqualTo("[2,4]");

            assertThat(generate(cluster, prompts.get(0))).isEqualTo(expected.get(0));
            List<Future<List<Long>>> concurrent = new ArrayList<>();
            for (long[] p : prompts) {
                concurrent.add(clients.submit(() -> generate(cluster, p)));
            }
            for (int i = 0; i < prompts.size(); i++) {
                assertThat(concurrent.get(i).get(5, TimeUnit.MINUTES)).as("request %d of 4", i)
                        .isEqualTo(expected.get(i));
            }

            // The worker of shard 1 killed mid-generation: the spare takes its slices, the stream finishes.
            int longest = MidStreamKill.longest(expected);
            String victim = shards.get(1).path("node_id").asString();
            String spare = state.path("spares").get(0).asString();
            List<Long> streamed = MidStreamKill.stream(cluster, clients, body(prompts.get(longest)), victim);
            assertThat(streamed).as("the tokens of a run without the failure").isEqualTo(expected.get(longest));
            JsonNode after = cluster.awaitState(s -> ready(s) && s.path("epoch").asLong() >= 2, Duration.ofMinutes(3));
            JsonNode reshard = currentStage(after).path("expert_groups");
            assertThat(reshard.get(1).path("node_id").asString()).as(after.toString()).isEqualTo(spare);
            assertThat(reshard.get(1).path("experts").toString()).isEqualTo("[2,4]");
            assertThat(generate(cluster, prompts.get(2))).isEqualTo(expected.get(2));

            // Then the spare, shard 1's worker now, killed too: with no spare left the stage is planned anew on the one
            // worker left, whole layers without head shards, and the stream finishes all the same.
            String first = reshard.get(0).path("node_id").asString();
            List<Long> again = MidStreamKill.stream(cluster, clients, body(prompts.get(longest)), spare);
            assertThat(again).as("the tokens of a run without either failure").isEqualTo(expected.get(longest));
            long before = after.path("epoch").asLong();
            JsonNode alone = cluster.awaitState(s -> ready(s) && s.path("epoch").asLong() > before, Duration.ofMinutes(3));
            assertThat(alone.path("pipeline").toString()).as(alone.toString()).isEqualTo("[\"" + first + "\"]");
            assertThat(currentStage(alone).path("expert_groups").isMissingNode()).as(alone.toString()).isTrue();
            assertThat(generate(cluster, prompts.get(3))).isEqualTo(expected.get(3));
        } finally {
            clients.shutdownNow();
        }
    }

    private static List<Long> generate(InProcessCluster cluster, long[] prompt) throws Exception {
        ClusterApi.Reply r = cluster.post("/api/v1/inference", body(prompt));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        List<Long> tokens = new ArrayList<>();
        r.json().path("token_ids").forEach(n -> tokens.add(n.asLong()));
        return tokens;
    }

    private static String body(long[] prompt) {
        String ids = java.util.Arrays.stream(prompt).mapToObj(Long::toString).collect(Collectors.joining(", ", "[", "]"));
        return "{\"token_ids\": " + ids + ", \"max_tokens\": " + TOKENS + ", \"temperature\": 0}";
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }

    private static JsonNode currentStage(JsonNode state) {
        for (JsonNode plan : state.path("plans")) {
            if (plan.path("epoch").asLong() == state.path("epoch").asLong()) {
                return plan.path("stages").get(0);
            }
        }
        throw new AssertionError("no plan of epoch " + state.path("epoch") + ": " + state);
    }
}
