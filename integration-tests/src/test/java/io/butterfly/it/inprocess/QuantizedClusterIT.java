package io.butterfly.it.inprocess;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.butterfly.common.gguf.GgufExport;
import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.common.quant.ShardQuantizer;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.coordinator.inference.sampling.SamplingParams;
import io.butterfly.harness.ClusterApi;
import io.butterfly.harness.InProcessCluster;
import io.butterfly.it.SingleProcessReference;
import io.butterfly.worker.engine.Activations;
import io.butterfly.worker.engine.CpuKernels;
import io.butterfly.worker.engine.ExecutorOptions;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import tools.jackson.databind.JsonNode;

/**
 * Quantized models served by the cluster: a GGUF file written here (the project's generator, then
 * {@code model gguf}'s export) or a model directory quantized by the registry on import, split across 1 to 4 workers,
 * answer exactly what one process answers on the same quantized bytes with the same activations (tokens and
 * log-probabilities, greedy and sampled). With float32 activations (weight-only), their greedy tokens are also those of
 * the reference: float32 math (libtorch) on the dequantized weights, log-probabilities within the weight-only kernels'
 * tolerance; 8-bit activations (the default) are checked against their own reference in QuantizedStageTest. In the cases marked llama3 the model has Llama 3.1's RoPE
 * scaling and the references read the model directory's config: a GGUF file (its scaling a rope_freqs tensor) computes
 * as its directory.
 */
class QuantizedClusterIT {

    /** Of a log-probability, against the dequantized float32 reference (docs/models.md: weight-only kernels). */
    private static final double TOLERANCE = 1e-3;
    private static final long[] PROMPT = {3, 141, 59, 26, 53, 58, 97, 93};

    @TempDir
    Path work;

    @ParameterizedTest(name = "{0} as {1} on {2} worker(s), {3} RoPE, {4} activations")
    @CsvSource({"Q8, gguf, 1, llama3, INT8", "Q4, gguf, 3, llama3, F32", "Q4_K, gguf, 2, plain, F32",
        "Q8, import, 4, plain, INT8"})
    void aQuantizedModelAnswersAsOneProcessAndAsItsDequantizedWeights(WeightQuantization q, String source, int workers,
                                                                      String rope, Activations activations)
            throws Exception {
        // Hidden 256: whole Q4_K/Q6_K super-blocks, so each format's own types are used (not the Q8_0 fallback).
        // Llama 3.1's RoPE scaling: a GGUF file carries it as rope_freqs.weight, and must compute as the directory.
        ModelConfig config = new ModelConfig(Architecture.LLAMA, 4, 256, 4, 2, 512, 320, 128, 1e-5, 500000.0, false, 1, 2,
                rope.equals("llama3") ? RopeScaling.llama3(8.0, 1.0, 4.0, 64) : null);
        Path model = work.resolve("llama");
        ModelGenerator.generate(config, 17, model);
        Path quantized = quantizedCopy(model, config, q);
        String modelId;
        Path imported;
        List<String> registryArgs = new ArrayList<>();
        if (source.equals("gguf")) {
            imported = work.resolve("llama-" + q.id() + ".gguf");
            GgufExport.write(model, imported, q);
            modelId = "llama-" + q.id();
        } else {
            imported = model;
            modelId = "llama-" + q.id();
            registryArgs.add("--butterfly.registry.import-quantize=" + q.id());
        }
        try (InProcessCluster cluster = new InProcessCluster(work)) {
            cluster.startDiscovery();
            cluster.startRegistry(imported, registryArgs.toArray(String[]::new));
            for (int i = 0; i < workers; i++) {
                cluster.startWorker(i, "--butterfly.worker.activations=" + activations);
            }
            cluster.startCoordinator(modelId, workers);
            JsonNode state = cluster.awaitState(s -> "READY".equals(s.path("system_state").asString()), Duration.ofMinutes(5));
            assertThat(state.path("pipeline").size()).isEqualTo(workers);
            for (double temperature : new double[]{0.0, 1.0}) {
                ClusterApi.Reply r = cluster.post("/api/v1/inference", """
                        {"token_ids": [3, 141, 59, 26, 53, 58, 97, 93], "max_tokens": 12, "temperature": %s, "seed": 77, "logprobs": 3}
                        """.formatted(temperature));
                assertThat(r.status()).as(r.body()).isEqualTo(200);
                SamplingParams params = new SamplingParams(temperature, 1.0, 77, 3);
                var oneProcess = SingleProcessReference.generate(quantized, PROMPT, 12, params,
                        ExecutorOptions.cpu().withActivations(activations));
                List<Long> tokens = new ArrayList<>();
                r.json().path("token_ids").forEach(n -> tokens.add(n.asLong()));
                List<Double> logprobs = new ArrayList<>();
                r.json().path("token_logprobs").forEach(n -> logprobs.add(n.asDouble()));
                assertThat(tokens).isEqualTo(oneProcess.tokens());
                assertThat(logprobs).isEqualTo(oneProcess.logprobs());
                if (temperature == 0.0 && activations == Activations.F32) {
                    var dequantized = SingleProcessReference.generate(quantized, PROMPT, 12, params,
                            ExecutorOptions.cpu().withKernels(CpuKernels.TORCH));
                    assertThat(tokens).isEqualTo(dequantized.tokens());
                    for (int i = 0; i < logprobs.size(); i++) {
                        assertThat(logprobs.get(i)).as("token %d", i).isCloseTo(dequantized.logprobs().get(i), within(TOLERANCE));
                    }
                }
            }
            JsonNode plans = cluster.get("/api/v1/system/state").json().path("plans");
            JsonNode stage = plans.get(plans.size() - 1).path("stages").get(0);
            assertThat(stage.path("weight_format").asString()).isEqualTo(q == WeightQuantization.Q8 ? "Q8_0"
                    : q == WeightQuantization.Q4 ? "Q4_0" : "Q4_K");
        }
    }

    /** The model's directory with its one weights file quantized as the registry quantizes on import. */
    private Path quantizedCopy(Path model, ModelConfig config, WeightQuantization q) throws Exception {
        Path out = Files.createDirectories(work.resolve("reference-" + q.id()));
        try (Stream<Path> files = Files.list(model)) {
            for (Path f : files.toList()) {
                if (!f.getFileName().toString().equals(ModelGenerator.WEIGHTS_FILE)) {
                    Files.copy(f, out.resolve(f.getFileName()));
                }
            }
        }
        try (SafetensorsFile file = SafetensorsFile.open(model.resolve(ModelGenerator.WEIGHTS_FILE))) {
            ShardQuantizer.write(out.resolve(ModelGenerator.WEIGHTS_FILE),
                    file.tensors().keySet().stream().map(t -> new ShardQuantizer.Source(t, file)).toList(), q, config);
        }
        return out;
    }
}
