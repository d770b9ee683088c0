package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.api.WorkerStatus;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.coordinator.inference.sampling.ChoiceSeeds;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.SingleProcessReference;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Collectors;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;

/**
 * Automatic prefix caching through the cluster: a prompt that starts with the blocks an earlier prompt left on every
 * stage is answered with the tokens and log-probabilities of a single process that never saw the earlier prompt (a
 * miss), bit for bit, greedy and sampled, on one, two, three and four workers (the model's five layers in as many
 * stages); every stage restored the shared blocks, and the coordinator's system/state shows what each stage holds. The {@code n} choices of one request share their prompt:
 * every stage computes it once and restores its full blocks for the other choices, whose tokens are unchanged. Prompts
 * are fed in chunks of 32 tokens, so a cached prefix spans several chunks: a hit goes in one step restoring every
 * cached block (per chunk, each chunk's last block would be computed again).
 */
class PrefixCacheIT {

    @TempDir
    Path work;

    @ParameterizedTest(name = "{0} worker(s)")
    @ValueSource(ints = {1, 2, 3, 4})
    void aHitAnswersAsAMiss(int workers) throws Exception {
        ModelConfig config = new ModelConfig(Architecture.LLAMA, 5, 48, 6, 3, 128, 300, 128, 1e-6, 500000.0, true, 1, 2);
        Path model = work.resolve("model");
        ModelGenerator.generate(config, 17, model);
        Random random = new Random(workers);
        long[] shared = random.longs(100, 3, 300).toArray();
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(model);
            for (int i = 0; i < workers; i++) {
                cluster.startWorker(i);
            }
            cluster.startCoordinator(model.getFileName().toString(), workers,
                    "--butterfly.coordinator.engine.prefill-chunk-tokens=" + CHUNK);
            JsonNode state = cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(12));
            List<String> pipeline = new ArrayList<>();
            state.path("pipeline").forEach(n -> pipeline.add(n.asString()));
            assertThat(pipeline).as("a stage per worker").hasSize(workers);
            // the coordinator feeds cached prefixes in one step once every stage reported its prefix cache on
            cluster.awaitState(s -> pipeline.stream().allMatch(w -> s.path("prefix_caches").path(w).path("enabled")
                    .asBoolean()), Duration.ofMinutes(2));
            for (double temperature : new double[]{0.0, 1.0}) {
                long[] first = concat(shared, random.longs(1 + random.nextInt(10), 3, 300).toArray());
                long[] second = concat(shared, random.longs(1 + random.nextInt(10), 3, 300).toArray());
                generate(cluster, first, temperature); // leaves the shared blocks on every stage
                List<Long> before = hitTokens(cluster, pipeline);
                ClusterApi.Reply r = generate(cluster, second, temperature);
                List<Long> after = hitTokens(cluster, pipeline);
                for (int w = 0; w < pipeline.size(); w++) { // 6 blocks in one step (per 32-token chunk: 3)
                    assertThat(after.get(w) - before.get(w)).as("%s restored the shared prefix's blocks in one step",
                            pipeline.get(w)).isEqualTo(96);
                }
                SingleProcessReference.Generation miss = SingleProcessReference.generate(model, second, 8,
                        new SamplingParams(temperature, 1.0, 99, 3));
                assertThat(longs(r.json().path("token_ids"))).isEqualTo(miss.tokens());
                List<Double> logprobs = new ArrayList<>();
                r.json().path("token_logprobs").forEach(n -> logprobs.add(n.asDouble()));
                assertThat(logprobs).isEqualTo(miss.logprobs());
            }
            for (String worker : pipeline) {
                WorkerStatus.PrefixCache cache = cluster.getFrom(worker, "/api/v1/worker/metrics")
                        .as(WorkerStatus.Metrics.class).prefixCache();
                assertThat(cache.enabled()).isTrue();
                assertThat(cache.hitTokens()).as("%s restored the shared blocks", worker).isGreaterThanOrEqualTo(2 * 32);
                assertThat(cache.blocks()).isPositive();
            }
            cluster.awaitState(s -> pipeline.stream().allMatch(w -> s.path("prefix_caches").path(w)
                    .path("hit_tokens").asLong() >= 64), Duration.ofMinutes(1));

            // n choices of one request: the prompt is computed once, the other choices find its blocks on every stage,
            // and each choice is what a single process without a cache samples with that choice's seed
            long[] prompt = random.longs(45, 3, 300).toArray();
            List<Long> hitsBefore = hitTokens(cluster, pipeline);
            ClusterApi.Reply choices = cluster.post("/v1/completions", """
                    {"prompt": [%s], "max_tokens": 8, "temperature": 1.0, "seed": 99, "logprobs": 3, "n": 3}
                    """.formatted(Arrays.stream(prompt).mapToObj(Long::toString).collect(Collectors.joining(","))));
            assertThat(choices.status()).as(choices.body()).isEqualTo(200);
            assertThat(choices.json().path("usage").path("prompt_tokens").asInt()).isEqualTo(prompt.length);
            for (int i = 0; i < 3; i++) {
                JsonNode choice = choices.json().path("choices").get(i);
                SingleProcessReference.Generation alone = SingleProcessReference.generate(model, prompt, 8,
                        new SamplingParams(1.0, 1.0, ChoiceSeeds.of(99, i), 3));
                List<Double> logprobs = new ArrayList<>();
                choice.path("logprobs").path("token_logprobs").forEach(n -> logprobs.add(n.asDouble()));
                assertThat(logprobs).as("choice %d", i).isEqualTo(alone.logprobs());
            }
            List<Long> hitsAfter = hitTokens(cluster, pipeline);
            int sharedTokens = (prompt.length - 1) / 16 * 16; // full blocks, the last token always computed: 2, in one
            // step each though the first chunk ends at 32 (cut there, choices 1 and 2 would restore one block each)
            for (int w = 0; w < pipeline.size(); w++) {
                assertThat(hitsAfter.get(w) - hitsBefore.get(w)).as("%s: choices 1 and 2 restored the prompt's blocks",
                        pipeline.get(w)).isEqualTo(2L * sharedTokens);
            }
        }
    }

    /** Prefill chunk tokens: the shared prefix spans several chunks. */
    private static final int CHUNK = 32;

    private static ClusterApi.Reply generate(InProcessCluster cluster, long[] prompt, double temperature) throws Exception {
        ClusterApi.Reply r = cluster.post("/api/v1/inference", """
                {"token_ids": [%s], "max_tokens": 8, "temperature": %s, "seed": 99, "logprobs": 3}
                """.formatted(Arrays.stream(prompt).mapToObj(Long::toString).collect(Collectors.joining(",")), temperature));
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        return r;
    }

    /** Each stage's prompt tokens found in its prefix cache so far. */
    private static List<Long> hitTokens(InProcessCluster cluster, List<String> pipeline) throws Exception {
        List<Long> hits = new ArrayList<>();
        for (String worker : pipeline) {
            hits.add(cluster.getFrom(worker, "/api/v1/worker/metrics").as(WorkerStatus.Metrics.class).prefixCache()
                    .hitTokens());
        }
        return hits;
    }

    private static List<Long> longs(JsonNode array) {
        List<Long> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asLong()));
        return out;
    }

    private static long[] concat(long[] a, long[] b) {
        long[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
