package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.MixtureOfExperts;
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
 * A mixture of experts whose every layer is larger than any worker's memory limit: no plan by layer ranges fits, so
 * the coordinator, choosing the number of expert groups from memory ({@code expert-groups=0}), spreads each layer's
 * experts over two workers (two stages of one layer, each with two groups), and greedy generation gives the tokens
 * of one process holding everything, alone and four requests at once.
 */
class ExpertGroupsByMemoryIT {

    private static final int TOKENS = 24;
    private static final long HEADROOM = 64L << 10;
    private static final int KV_TOKENS = 64;

    /** Mixtral, two layers of 8 experts (top 2) of 256 columns: the experts are ~90 % of a layer. */
    static final ModelConfig MIXTRAL = new ModelConfig(Architecture.LLAMA, 2, 48, 6, 3, 256, 300, 256, 1e-6, 500000.0,
            true, 1, 2).withExperts(new MixtureOfExperts(MixtureOfExperts.Kind.MIXTRAL, 8, 2, 256, 0, true, 1,
            List.of()));

    @TempDir
    Path work;

    @Test
    void aLayerNoWorkerHoldsIsServedByItsExpertGroups() throws Exception {
        Path model = work.resolve("mixtral-large-layers");
        ModelGenerator.generate(MIXTRAL, 13, model);
        ExecutorService clients = Executors.newFixedThreadPool(4);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            Footprint f = awaitFootprint(cluster, model.getFileName().toString());
            long experts = 3L * MIXTRAL.hiddenSize() * MIXTRAL.experts().expertSize() * MIXTRAL.experts().experts()
                    * Float.BYTES;
            // Group 0 of the first stage: its layer without half of the experts, the embedding, a stage's headroom.
            long memory = f.largestLayer - experts / 2 + f.largestEnd + HEADROOM + 4096;
            assertThat(memory).as("a worker cannot hold one layer (%s), only half of its experts", f)
                    .isLessThan(f.smallestLayer + HEADROOM);
            for (int i = 0; i < 4; i++) {
                cluster.startWorker(i, cluster.sharedStoreOption(), "--butterfly.worker.memory-limit=" + memory + "B");
            }
            cluster.startCoordinator(model.getFileName().toString(), 4,
                    "--butterfly.coordinator.planning.expert-groups=0",
                    "--butterfly.coordinator.planning.activation-headroom=" + HEADROOM + "B",
                    "--butterfly.coordinator.planning.kv-cache-tokens=" + KV_TOKENS);
            JsonNode state = cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()),
                    Duration.ofMinutes(8));
            JsonNode stages = currentStages(state);
            assertThat(stages.size()).as(state.toString()).isEqualTo(2);
            List<String> holders = new ArrayList<>();
            for (JsonNode stage : stages) {
                JsonNode groups = stage.path("expert_groups");
                assertThat(groups.size()).as(state.toString()).isEqualTo(2);
                assertThat(groups.get(0).path("experts").toString()).isEqualTo("[0,4]");
                assertThat(groups.get(1).path("experts").toString()).isEqualTo("[4,8]");
                groups.forEach(g -> holders.add(g.path("node_id").asString()));
            }
            assertThat(holders).as("every worker holds a group").containsExactlyInAnyOrder("worker-0", "worker-1",
                    "worker-2", "worker-3");

            Random random = new Random(49);
            List<long[]> prompts = new ArrayList<>();
            List<List<Long>> expected = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                long[] p = random.longs(3 + random.nextInt(10), 3, 300).toArray();
                prompts.add(p);
                expected.add(SingleProcessReference.generate(model, p, TOKENS, new SamplingParams(0.0, 1.0, 0, 0))
                        .tokens());
            }
            assertThat(generate(cluster, prompts.get(0))).isEqualTo(expected.get(0));
            List<Future<List<Long>>> concurrent = new ArrayList<>();
            for (long[] p : prompts) {
                concurrent.add(clients.submit(() -> generate(cluster, p)));
            }
            for (int i = 0; i < prompts.size(); i++) {
                assertThat(concurrent.get(i).get(5, TimeUnit.MINUTES)).as("request %d of 4", i)
                        .isEqualTo(expected.get(i));
            }
        } finally {
            clients.shutdownNow();
        }
    }

    private static List<Long> generate(InProcessCluster cluster, long[] prompt) throws Exception {
        String ids = java.util.Arrays.stream(prompt).mapToObj(Long::toString).collect(Collectors.joining(", ", "[", "]"));
        ClusterApi.Reply r = cluster.post("/api/v1/inference",
                "{\"token_ids\": " + ids + ", \"max_tokens\": " + TOKENS + ", \"temperature\": 0}");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        List<Long> tokens = new ArrayList<>();
        r.json().path("token_ids").forEach(n -> tokens.add(n.asLong()));
        return tokens;
    }

    /** The current epoch's stages as system/state lists them. */
    private static JsonNode currentStages(JsonNode state) {
        for (JsonNode plan : state.path("plans")) {
            if (plan.path("epoch").asLong() == state.path("epoch").asLong()) {
                return plan.path("stages");
            }
        }
        throw new AssertionError("no plan of epoch " + state.path("epoch") + ": " + state);
    }

    /** A layer's bytes as the coordinator counts them (its F32 shard and KV cache), and the larger end piece. */
    record Footprint(long smallestLayer, long largestLayer, long largestEnd) {
    }

    private static Footprint awaitFootprint(InProcessCluster cluster, String modelId) throws Exception {
        long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos(); // a registry starts slowly under load
        while (true) {
            try {
                ClusterApi.Reply r = cluster.getFrom("registry", "/api/v1/models/" + modelId);
                if (r.status() == 200) {
                    long kv = 2L * MIXTRAL.kvDim() * KV_TOKENS * Float.BYTES;
                    long[] layers = new long[MIXTRAL.numLayers()];
                    long ends = 0;
                    for (JsonNode file : r.json().path("files")) {
                        long size = file.path("size_bytes").asLong();
                        switch (file.path("kind").asString()) {
                            case "LAYER" -> {
                                int start = file.path("layer_start").asInt();
                                int end = Math.max(start + 1, file.path("layer_end").asInt());
                                for (int l = start; l < end; l++) {
                                    layers[l] += size / (end - start);
                                }
                            }
                            case "EMBEDDING", "HEAD" -> ends = Math.max(ends, size);
                            default -> { }
                        }
                    }
                    long smallest = Long.MAX_VALUE;
                    long largest = 0;
                    for (long l : layers) {
                        smallest = Math.min(smallest, l + kv);
                        largest = Math.max(largest, l + kv);
                    }
                    assertThat(smallest).as(r.body()).isGreaterThan(kv);
                    return new Footprint(smallest, largest, ends);
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
