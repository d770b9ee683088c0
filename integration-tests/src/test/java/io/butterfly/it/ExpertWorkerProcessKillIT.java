package io.butterfly.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.cli.http.ResumableStream;
import io.butterfly.cli.process.Signal;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.MixtureOfExperts;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.harness.ClusterApi;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A worker process holding an expert group SIGKILLed mid-generation (docs/sharding.md#expert-groups): discovery,
 * registry, coordinator and four workers as separate JVMs over mutual TLS; a Mixtral whose one stage's routed experts
 * are spread over three workers, the fourth a spare. The JVM of expert group 1 is frozen (SIGSTOP) at the stream's
 * fifth token, so the generation is under way, then SIGKILLed: the spare takes that group's experts and the stream finishes with the tokens of one process holding
 * everything. (In one JVM, with both MoE kinds and 16 concurrent requests: {@code ExpertGroupsClusterIT}.)
 */
class ExpertWorkerProcessKillIT {

    private static final int TOKENS = 40;

    @TempDir
    Path work;

    @Test
    void anExpertWorkerSigkilledMidGenerationLeavesTheFaultFreeTokens() throws Exception {
        ModelConfig config = new ModelConfig(Architecture.LLAMA, 4, 48, 6, 3, 64, 300, 256, 1e-6, 500000.0, true, 1, 2)
                .withExperts(new MixtureOfExperts(MixtureOfExperts.Kind.MIXTRAL, 8, 2, 64, 0, true, 1, List.of()));
        Path model = work.resolve("mixtral-model");
        ModelGenerator.generate(config, 11, model);
        long[] prompt = {17, 5, 230, 41, 99, 12, 7, 250, 3};
        List<Long> expected = SingleProcessReference.generateEach(model, List.of(prompt), TOKENS,
                new SamplingParams(0.0, 1.0, 0, 0)).get(0).tokens();
        assertThat(expected).hasSizeGreaterThan(10); // still streaming when the kill lands

        ExecutorService client = Executors.newSingleThreadExecutor();
        try (LocalCluster cluster = new LocalCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < 4; i++) { // three expert groups and a spare
                cluster.startWorker(i, cluster.sharedStoreOption());
            }
            cluster.startCoordinator("mixtral-model", 3, "--butterfly.coordinator.planning.expert-groups=3",
                    "--butterfly.coordinator.engine.recovery-timeout=5m",
                    "--butterfly.coordinator.liveness.acceptable-heartbeat-pause=30s");
            JsonNode state = cluster.awaitState(s -> ready(s) && s.path("spares").size() == 1, Duration.ofMinutes(8));
            JsonNode groups = currentStage(state).path("expert_groups");
            assertThat(groups.size()).as(state.toString()).isEqualTo(3);
            String victim = groups.get(1).path("node_id").asString();
            String spare = state.path("spares").get(0).asString();

            CountDownLatch underWay = new CountDownLatch(1);
            List<Long> streamed = new ArrayList<>();
            Future<ResumableStream.Outcome> stream = client.submit(() -> new ResumableStream(
                    List.of(cluster.coordinatorUrl() + "/api/v1/inference/stream"), Duration.ofMinutes(5),
                    Duration.ofMinutes(5), notice -> { }).post(body(prompt), (name, data) -> {
                        if (name.equals("token")) {
                            streamed.add(ClusterApi.JSON.readTree(data).path("token_id").asLong());
                            if (streamed.size() == 5) {
                                // frozen at once, so the generation is still under way when the SIGKILL lands
                                cluster.signal(victim, Signal.STOP);
                                underWay.countDown();
                            }
                        }
                    }));
            assertThat(underWay.await(3, TimeUnit.MINUTES)).as("the stream under way").isTrue();
            long pid = cluster.pid(victim);
            cluster.kill(victim); // SIGKILL, then waits for the process to exit
            assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
                    .as("%s (pid %d) is gone", victim, pid).isFalse();
            ResumableStream.Outcome outcome = stream.get(8, TimeUnit.MINUTES);
            assertThat(outcome.status()).as(outcome.body()).isEqualTo(200);
            assertThat(streamed).as("the tokens of a run without the failure").isEqualTo(expected);

            JsonNode after = cluster.awaitState(s -> ready(s) && s.path("epoch").asLong() >= 2, Duration.ofMinutes(3));
            JsonNode regrouped = currentStage(after).path("expert_groups");
            assertThat(regrouped.get(1).path("node_id").asString()).isEqualTo(spare);
            assertThat(regrouped.get(1).path("experts").toString()).isEqualTo(groups.get(1).path("experts").toString());
            System.out.printf("ExpertWorkerProcessKillIT: %s (experts %s) SIGKILLed after %d tokens, %s took its experts,"
                    + " %d tokens as the fault-free run%n", victim, groups.get(1).path("experts"), 5, spare,
                    streamed.size());
        } finally {
            client.shutdownNow();
        }
    }

    private static String body(long[] prompt) {
        String ids = Arrays.stream(prompt).mapToObj(Long::toString).collect(Collectors.joining(", ", "[", "]"));
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
