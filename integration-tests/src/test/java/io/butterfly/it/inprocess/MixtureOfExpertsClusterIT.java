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
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import tools.jackson.databind.JsonNode;

/**
 * A mixture-of-experts model cut by layer ranges over two workers generates the greedy tokens (and log-probabilities)
 * of one process holding the whole model: Mixtral, and Qwen3-MoE with its q/k norms.
 */
class MixtureOfExpertsClusterIT {

    @TempDir
    Path work;

    @ParameterizedTest(name = "{0} on 2 workers")
    @EnumSource(value = MixtureOfExperts.Kind.class, names = {"MIXTRAL", "QWEN3_MOE"})
    void splitGenerationEqualsSingleProcess(MixtureOfExperts.Kind kind) throws Exception {
        ModelConfig dense = new ModelConfig(Architecture.LLAMA, 4, 48, 6, 3, 64, 300, 128, 1e-6, 500000.0, true, 1, 2);
        ModelConfig config = dense.withExperts(kind == MixtureOfExperts.Kind.MIXTRAL
                ? new MixtureOfExperts(kind, 8, 2, 64, 0, true, 1, List.of())
                : new MixtureOfExperts(kind, 8, 2, 32, 0, true, 1, List.of()));
        Path model = work.resolve(kind.modelType() + "-model");
        ModelGenerator.generate(config, 11, model);
        long[] prompt = {3, 141, 59, 26, 53, 58, 97, 93};
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startAll(model, 2);
            JsonNode state = cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
            assertThat(state.path("pipeline").size()).isEqualTo(2);
            ClusterApi.Reply r = cluster.post("/api/v1/inference", """
                    {"token_ids": [3, 141, 59, 26, 53, 58, 97, 93], "max_tokens": 10, "temperature": 0, "logprobs": 3}
                    """);
            assertThat(r.status()).as(r.body()).isEqualTo(200);
            SingleProcessReference.Generation expected = SingleProcessReference.generate(model, prompt, 10,
                    new SamplingParams(0.0, 1.0, 0, 3));
            List<Long> tokens = new ArrayList<>();
            r.json().path("token_ids").forEach(n -> tokens.add(n.asLong()));
            List<Double> logprobs = new ArrayList<>();
            r.json().path("token_logprobs").forEach(n -> logprobs.add(n.asDouble()));
            assertThat(tokens).hasSize(10).isEqualTo(expected.tokens());
            assertThat(logprobs).isEqualTo(expected.logprobs());
        }
    }
}
