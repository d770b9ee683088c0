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
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import tools.jackson.databind.JsonNode;

/**
 * Distributed equals single-process, bit for bit, for both architectures and 1 to 4 workers (each a worker service
 * of its own, in this JVM). The four cases cover each worker count once and each architecture split and unsplit;
 * the stage-by-stage split equivalence for every cut is the worker's unit tests' job.
 */
class WorkerCountEquivalenceIT {

    @TempDir
    Path work;

    @ParameterizedTest(name = "{0} on {1} worker(s)")
    @CsvSource({"GPT2, 1", "GPT2, 4", "LLAMA, 2", "LLAMA, 3"})
    void generationEqualsSingleProcess(Architecture arch, int workers) throws Exception {
        ModelConfig config = arch == Architecture.GPT2
                ? new ModelConfig(arch, 4, 64, 4, 4, 256, 300, 128, 1e-5, 0, true, 0, 0)
                : new ModelConfig(arch, 5, 48, 6, 3, 128, 300, 128, 1e-6, 500000.0, true, 1, 2);
        Path model = work.resolve(arch.id() + "-model");
        ModelGenerator.generate(config, 11, model);
        long[] prompt = {3, 141, 59, 26, 53, 58, 97, 93};
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startAll(model, workers);
            JsonNode state = cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
            assertThat(state.path("pipeline").size()).isEqualTo(workers);
            for (double temperature : new double[]{0.0, 1.0}) {
                ClusterApi.Reply r = cluster.post("/api/v1/inference", """
                        {"token_ids": [3, 141, 59, 26, 53, 58, 97, 93], "max_tokens": 10, "temperature": %s, "seed": 1234, "logprobs": 3}
                        """.formatted(temperature));
                assertThat(r.status()).as(r.body()).isEqualTo(200);
                SingleProcessReference.Generation expected = SingleProcessReference.generate(model, prompt, 10,
                        new SamplingParams(temperature, 1.0, 1234, 3));
                List<Long> tokens = new ArrayList<>();
                r.json().path("token_ids").forEach(n -> tokens.add(n.asLong()));
                List<Double> logprobs = new ArrayList<>();
                r.json().path("token_logprobs").forEach(n -> logprobs.add(n.asDouble()));
                assertThat(tokens).isEqualTo(expected.tokens());
                assertThat(logprobs).isEqualTo(expected.logprobs());
            }
        }
    }
}
