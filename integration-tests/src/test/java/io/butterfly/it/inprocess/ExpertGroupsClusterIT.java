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
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import tools.jackson.databind.JsonNode;

/**
 * A mixture of experts whose routed experts the coordinator spreads over three workers (one stage, three expert
 * groups, {@code butterfly.coordinator.planning.expert-groups=3}) and a spare: greedy generation gives the tokens of one
 * process holding everything, alone and under 16 concurrent requests; the worker holding an expert group is killed
 * mid-generation, the spare takes its experts (system/state says which worker holds which), and the paused request
 * finishes with the fault-free tokens.
 */
class ExpertGroupsClusterIT {

    private static final int TOKENS = 40;

    @TempDir
    Path work;

    @ParameterizedTest(name = "{0}, experts over 3 workers")
    @EnumSource(value = MixtureOfExperts.Kind.class, names = {"MIXTRAL", "QWEN3_MOE"})
    void spreadExpertsGiveTheTokensOfOneProcess(MixtureOfExperts.Kind kind) throws Exception {
        ModelConfig dense = new ModelConfig(Architecture.LLAMA, 4, 48, 6, 3, 64, 300, 256, 1e-6, 500000.0, true, 1, 2);
        ModelConfig config = dense.withExperts(kind == MixtureOfExperts.Kind.MIXTRAL
                ? new MixtureOfExperts(kind, 8, 2, 64, 0, true, 1, List.of())
                : new MixtureOfExperts(kind, 8, 2, 32, 0, true, 1, List.of()));
        Path model = work.resolve(kind.modelType() + "-model");
        ModelGenerator.generate(config, 11, model);
        String modelId = model.getFileName().toString();
        // The greedy tokens of one process holding everything, from one load of the model, before the cluster starts:
        // no reference executor is open beside the in-process workers' (a one-load reference run after READY once
        // failed the cluster's next request, docs/testing.md).
        Random random = new Random(23);
        List<long[]> prompts = new ArrayList<>();
        for (int i = 0; i < 16; i++) {
            prompts.add(random.longs(4 + random.nextInt(12), 3, 300).toArray());
        }
        List<List<Long>> expected = SingleProcessReference.generateEach(model, prompts, TOKENS,
                new SamplingParams(0.0, 1.0, 0, 0)).stream().map(SingleProcessReference.Generation::tokens).toList();
        ExecutorService clients = Executors.newFixedThreadPool(16);
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 4; i++) { // three expert groups and a spare
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator(modelId, 3, "--butterfly.coordinator.planning.expert-groups=3",
                    "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonNode state = cluster.awaitState(s -> ready(s) && s.path("spares").size() == 1, Duration.ofMinutes(8));
            assertThat(state.path("pipeline").size()).isEqualTo(1);
            JsonNode groups = currentStage(state).path("expert_groups");
            assertThat(groups.size()).as(state.toString()).isEqualTo(3);
            assertThat(groups.get(0).path("node_id").asString()).isEqualTo(state.path("pipeline").get(0).asString());
            assertThat(groups.get(0).path("experts").toString()).isEqualTo("[0,3]");
            assertThat(groups.get(1).path("experts").toString()).isEqualTo("[3,6]");
            assertThat(groups.get(2).path("experts").toString()).isEqualTo("[6,8]");

            // Greedy tokens of one process holding everything, alone and 16 at once.
            assertThat(generate(cluster, prompts.get(0))).isEqualTo(expected.get(0));
            List<Future<List<Long>>> concurrent = new ArrayList<>();
            for (long[] p : prompts) {
                concurrent.add(clients.submit(() -> generate(cluster, p)));
            }
            for (int i = 0; i < prompts.size(); i++) {
                assertThat(concurrent.get(i).get(5, TimeUnit.MINUTES)).as("request %d of 16", i)
                        .isEqualTo(expected.get(i));
            }

            // The worker of expert group 1 killed mid-generation: the spare takes its experts, the stream finishes.
            int longest = MidStreamKill.longest(expected);
            String victim = groups.get(1).path("node_id").asString();
            String spare = state.path("spares").get(0).asString();
            List<Long> streamed = MidStreamKill.stream(cluster, clients, body(prompts.get(longest)), victim);
            assertThat(streamed).as("the tokens of a run without the failure").isEqualTo(expected.get(longest));
            JsonNode after = cluster.awaitState(s -> ready(s) && s.path("epoch").asLong() >= 2, Duration.ofMinutes(3));
            JsonNode regrouped = currentStage(after).path("expert_groups");
            assertThat(regrouped.get(1).path("node_id").asString()).isEqualTo(spare);
            assertThat(regrouped.get(1).path("experts").toString()).isEqualTo("[3,6]");
            assertThat(generate(cluster, prompts.get(2))).isEqualTo(expected.get(2));
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

    /** The current epoch's only stage as system/state lists it. */
    private static JsonNode currentStage(JsonNode state) {
        for (JsonNode plan : state.path("plans")) {
            if (plan.path("epoch").asLong() == state.path("epoch").asLong()) {
                return plan.path("stages").get(0);
            }
        }
        throw new AssertionError("no plan of epoch " + state.path("epoch") + ": " + state);
    }

    private static boolean ready(JsonNode s) {
        return "READY".equals(s.path("system_state").asString());
    }
}
