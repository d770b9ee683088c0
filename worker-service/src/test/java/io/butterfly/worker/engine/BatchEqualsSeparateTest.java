package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Packing sequences of different lengths into one forward call gives each sequence the logits it gets
 * alone: prefill of 5 and 3 tokens together, batched decode, then a chunked-prefill continuation of one
 * sequence packed with a decode step of the other. Both sequences are batched in one executor and run
 * alone in another; the result matches within float32 rounding (see {@link #TOLERANCE}).
 */
class BatchEqualsSeparateTest {

    @TempDir
    Path dir;

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("llama gqa", ModelFixtures.llamaGqa(), ModelFixtures.weightsOnly().withAttentionBias(true)),
                Arguments.of("gpt2", ModelFixtures.gpt2(), ModelFixtures.weightsOnly()));
    }

    /**
     * Not bit-exact: the BLAS GEMM behind each projection picks its kernel and blocking by the number of
     * rows (a one-row product takes a GEMV path), so the same row rounds differently when packed with
     * others (checked directly on torch's linear and matmul). The gap is a few float32 ulps per layer:
     * measured up to 7.5e-6 on logits of magnitude up to 7 (about 1e-6 relative).
     */
    private static final double TOLERANCE = 1e-5;

    private static void assertSameLogits(float[] batched, float[] alone, String what) {
        assertThat(batched).as(what).hasSameSizeAs(alone);
        double maxDiff = 0;
        for (int i = 0; i < alone.length; i++) {
            maxDiff = Math.max(maxDiff, Math.abs(batched[i] - alone[i]));
        }
        assertThat(maxDiff).as(what + ": max |batched - alone|").isLessThanOrEqualTo(TOLERANCE);
        assertThat(Pipeline.argMax(batched, 0, batched.length)).as(what + ": greedy token")
                .isEqualTo(Pipeline.argMax(alone, 0, alone.length));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void batchedLogitsEqualSeparateLogits(String name, ModelConfig config, ModelGenerator.Options options) throws Exception {
        Path model = ModelFixtures.write(config, options, 5, dir.resolve("model"));
        Random rnd = new Random(9);
        long[] a = rnd.longs(9, 0, config.vocabSize()).toArray();
        long[] b = rnd.longs(9, 0, config.vocabSize()).toArray();
        // (new tokens of a, new tokens of b) per step; {1, 3} continues b's prefill in chunks next to a decode of a.
        int[][] plan = {{5, 3}, {1, 1}, {1, 1}, {1, 3}, {1, 1}};
        int v = config.vocabSize();
        try (Pipeline batched = Pipeline.whole(config, model); Pipeline separate = Pipeline.whole(config, model)) {
            int posA = 0;
            int posB = 0;
            for (int[] step : plan) {
                long[] ids = new long[step[0] + step[1]];
                System.arraycopy(a, posA, ids, 0, step[0]);
                System.arraycopy(b, posB, ids, step[0], step[1]);
                float[] together = batched.step(List.of(new SequenceChunk("a", posA, step[0]),
                        new SequenceChunk("b", posB, step[1])), ids).toFloats();
                float[] aloneA = separate.step(List.of(new SequenceChunk("a", posA, step[0])),
                        Arrays.copyOfRange(a, posA, posA + step[0])).toFloats();
                float[] aloneB = separate.step(List.of(new SequenceChunk("b", posB, step[1])),
                        Arrays.copyOfRange(b, posB, posB + step[1])).toFloats();
                assertSameLogits(Arrays.copyOfRange(together, 0, v), aloneA, "a at " + posA);
                assertSameLogits(Arrays.copyOfRange(together, v, 2 * v), aloneB, "b at " + posB);
                posA += step[0];
                posB += step[1];
            }
        }
    }
}
