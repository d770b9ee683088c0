package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The executor's logits match an independent double-precision reference written from the formulas. */
class ReferenceMatchTest {

    private static final double TOLERANCE = 1e-4;
    private static final RopeScaling LLAMA3 = RopeScaling.llama3(8.0, 1.0, 4.0, 64);

    @TempDir
    Path dir;

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("llama, grouped-query attention (4 heads, 2 kv heads)", ModelFixtures.llamaGqa(), ModelFixtures.weightsOnly()),
                Arguments.of("llama, q/k/v biases (Qwen2 style), tied head", ModelFixtures.llamaTied(), ModelFixtures.weightsOnly().withAttentionBias(true)),
                Arguments.of("llama, biases on q/k/v/o, BF16 weights", ModelFixtures.llamaGqa(), ModelFixtures.weightsOnly().withAllAttentionBiases().withDtype("BF16")),
                Arguments.of("llama, F16 weights", ModelFixtures.llamaGqa(), ModelFixtures.weightsOnly().withDtype("F16")),
                Arguments.of("llama, llama3 rope scaling (Llama 3.1)", ModelFixtures.llamaGqa(LLAMA3), ModelFixtures.weightsOnly()),
                Arguments.of("llama, linear rope scaling", ModelFixtures.llamaGqa(RopeScaling.linear(4.0)), ModelFixtures.weightsOnly()),
                Arguments.of("qwen3, per-head q/k norms", ModelFixtures.qwen3(), ModelFixtures.weightsOnly()),
                Arguments.of("mixtral, 8 experts, top 2 renormalized", ModelFixtures.mixtral(), ModelFixtures.weightsOnly()),
                Arguments.of("qwen2-moe, top 2 not renormalized, shared expert, a dense layer, q/k/v biases",
                        ModelFixtures.qwen2Moe(), ModelFixtures.weightsOnly().withAttentionBias(true)),
                Arguments.of("qwen3-moe, q/k norms, top 2 renormalized, every second layer sparse", ModelFixtures.qwen3Moe(),
                        ModelFixtures.weightsOnly()),
                Arguments.of("gpt2", ModelFixtures.gpt2(), ModelFixtures.weightsOnly()),
                Arguments.of("gpt2, names without transformer. prefix, untied lm_head", ModelFixtures.gpt2UntiedHead(),
                        ModelFixtures.weightsOnly().withoutTransformerPrefix()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void prefillAndDecodeMatchReference(String name, ModelConfig config, ModelGenerator.Options options) throws Exception {
        Path model = ModelFixtures.write(config, options, 42, dir.resolve("model"));
        ReferenceModel reference = new ReferenceModel(config, model.resolve("model.safetensors"));
        Random rnd = new Random(7);
        long[] prompt = rnd.longs(7, 0, config.vocabSize()).toArray();
        try (DjlPartitionExecutor exec = DjlPartitionExecutor.load(PartitionSpec.whole(config),
                List.of(model.resolve("model.safetensors")), ExecutorOptions.cpu())) {
            StageResult prefill = exec.forward(List.of(new SequenceChunk("s", 0, prompt.length)), new StageInput.Tokens(prompt));
            assertThat(prefill.logits()).isTrue();
            assertThat(prefill.shape()).containsExactly(1, config.vocabSize());
            float[] logits = prefill.toFloats();
            assertClose(logits, reference.feed(prompt), "prefill");
            int position = prompt.length;
            for (int step = 0; step < 4; step++) {
                // Random next tokens rather than argmax, so the cache sees varied inputs.
                long next = rnd.nextInt(config.vocabSize());
                logits = exec.forward(List.of(new SequenceChunk("s", position, 1)), new StageInput.Tokens(new long[]{next})).toFloats();
                assertClose(logits, reference.feed(next), "decode step " + step);
                position++;
            }
        }
    }

    static Stream<Arguments> newArchitectures() {
        return Stream.of(
                Arguments.of("qwen3", ModelFixtures.qwen3(), ModelFixtures.weightsOnly()),
                Arguments.of("mixtral", ModelFixtures.mixtral(), ModelFixtures.weightsOnly()),
                Arguments.of("qwen2-moe", ModelFixtures.qwen2Moe(), ModelFixtures.weightsOnly().withAttentionBias(true)),
                Arguments.of("qwen3-moe", ModelFixtures.qwen3Moe(), ModelFixtures.weightsOnly()));
    }

    /** Greedy decoding picks the reference's tokens, and the routers spread the tokens over the experts. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("newArchitectures")
    void greedyTokensMatchReference(String name, ModelConfig config, ModelGenerator.Options options) throws Exception {
        Path model = ModelFixtures.write(config, options, 43, dir.resolve("model"));
        ReferenceModel reference = new ReferenceModel(config, model.resolve("model.safetensors"));
        long[] prompt = new Random(8).longs(5, 0, config.vocabSize()).toArray();
        List<Long> engineTokens = new java.util.ArrayList<>();
        List<Long> referenceTokens = new java.util.ArrayList<>();
        try (DjlPartitionExecutor exec = DjlPartitionExecutor.load(PartitionSpec.whole(config),
                List.of(model.resolve("model.safetensors")), ExecutorOptions.cpu())) {
            float[] logits = exec.forward(List.of(new SequenceChunk("s", 0, prompt.length)), new StageInput.Tokens(prompt))
                    .toFloats();
            double[] expected = reference.feed(prompt);
            for (int step = 0; step < 12; step++) {
                assertClose(logits, expected, "step " + step);
                long next = Pipeline.argMax(logits, 0, logits.length);
                engineTokens.add(next);
                referenceTokens.add(argMax(expected));
                logits = exec.forward(List.of(new SequenceChunk("s", prompt.length + step, 1)),
                        new StageInput.Tokens(new long[]{next})).toFloats();
                expected = reference.feed(next);
            }
        }
        assertThat(engineTokens).isEqualTo(referenceTokens);
        assertThat(engineTokens.stream().distinct().count()).as("greedy tokens vary").isGreaterThan(2);
        if (config.experts() != null) {
            assertThat(reference.expertsUsed().size()).as("experts chosen over the run")
                    .isGreaterThan(config.experts().perToken());
        }
    }

    private static long argMax(double[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) {
            if (v[i] > v[best]) {
                best = i;
            }
        }
        return best;
    }

    /** The scaling is not a no-op at these positions: the reference's logits differ with it and without it. */
    @Test
    void ropeScalingChangesTheLogitsItIsCheckedOn() throws Exception {
        Path model = ModelFixtures.write(ModelFixtures.llamaGqa(LLAMA3), ModelFixtures.weightsOnly(), 42, dir.resolve("model"));
        ReferenceModel scaled = new ReferenceModel(ModelFixtures.llamaGqa(LLAMA3), model.resolve("model.safetensors"));
        ReferenceModel plain = new ReferenceModel(ModelFixtures.llamaGqa(), model.resolve("model.safetensors"));
        long[] prompt = new Random(7).longs(7, 0, 128).toArray();
        double[] a = scaled.feed(prompt);
        double[] b = plain.feed(prompt);
        double maxDiff = 0;
        for (int i = 0; i < a.length; i++) {
            maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
        }
        assertThat(maxDiff).isGreaterThan(100 * TOLERANCE);
    }

    private static void assertClose(float[] actual, double[] expected, String what) {
        assertThat(actual).hasSize(expected.length);
        double maxDiff = 0;
        double min = Double.MAX_VALUE;
        double max = -Double.MAX_VALUE;
        for (int i = 0; i < actual.length; i++) {
            maxDiff = Math.max(maxDiff, Math.abs(actual[i] - expected[i]));
            min = Math.min(min, expected[i]);
            max = Math.max(max, expected[i]);
        }
        // The logits must be informative for the comparison to mean anything.
        assertThat(max - min).as(what + ": logit spread").isGreaterThan(1.0);
        assertThat(maxDiff).as(what + ": max |executor - reference| over " + actual.length + " logits").isLessThanOrEqualTo(TOLERANCE);
    }
}
