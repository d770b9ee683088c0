package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Half-precision projection weights ({@code butterfly.worker.weight-dtype}) compute the same model: a prefill and
 * decode steps give logits near the float32 ones, and not the same bits (the weights really are rounded).
 */
class WeightDtypeTest {

    @TempDir
    Path dir;

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("llama, F16", ModelFixtures.llamaGqa(), WeightDtype.F16),
                Arguments.of("llama, BF16", ModelFixtures.llamaGqa(), WeightDtype.BF16),
                Arguments.of("gpt2, BF16", ModelFixtures.gpt2(), WeightDtype.BF16));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void halfPrecisionWeightsGiveLogitsNearFloat32(String name, ModelConfig config, WeightDtype dtype) throws Exception {
        Path model = ModelFixtures.write(config, ModelFixtures.weightsOnly(), 42, dir.resolve("model"));
        List<float[]> exact = run(config, model, ExecutorOptions.cpu());
        List<float[]> half = run(config, model, ExecutorOptions.cpu().withWeightDtype(dtype));
        for (int step = 0; step < exact.size(); step++) {
            float[] a = exact.get(step);
            float[] b = half.get(step);
            double maxDiff = 0;
            float min = Float.MAX_VALUE;
            float max = -Float.MAX_VALUE;
            for (int i = 0; i < a.length; i++) {
                maxDiff = Math.max(maxDiff, Math.abs(a[i] - b[i]));
                min = Math.min(min, a[i]);
                max = Math.max(max, a[i]);
            }
            assertThat(max - min).as("step %d: logit spread", step).isGreaterThan(1f);
            // bfloat16 keeps 8 significant bits (a weight's relative error up to 2^-9), float16 11
            assertThat(maxDiff).as("step %d: max |%s - float32|", step, dtype).isGreaterThan(0).isLessThan(0.05 * (max - min));
        }
    }

    /** Logits of a 7-token prefill and 3 decode steps on random tokens. */
    private static List<float[]> run(ModelConfig config, Path model, ExecutorOptions options) throws Exception {
        Random rnd = new Random(7);
        long[] prompt = rnd.longs(7, 0, config.vocabSize()).toArray();
        List<float[]> logits = new ArrayList<>();
        try (DjlPartitionExecutor exec = DjlPartitionExecutor.load(PartitionSpec.whole(config),
                List.of(model.resolve("model.safetensors")), options)) {
            logits.add(exec.forward(List.of(new SequenceChunk("s", 0, prompt.length)), new StageInput.Tokens(prompt)).toFloats());
            for (int step = 0; step < 3; step++) {
                long next = rnd.nextInt(config.vocabSize());
                logits.add(exec.forward(List.of(new SequenceChunk("s", prompt.length + step, 1)),
                        new StageInput.Tokens(new long[]{next})).toFloats());
            }
        }
        return logits;
    }
}
