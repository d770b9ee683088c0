package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The benchmark's plain DJL loop computes what the partition executor computes. */
class PlainDjlLoopTest {

    @TempDir
    Path dir;

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("llama gqa", TestModels.llamaGqa(), TestModels.Options.plain()),
                Arguments.of("llama gqa, llama3 rope scaling", TestModels.llamaGqa(RopeScaling.llama3(8.0, 1.0, 4.0, 64)),
                        TestModels.Options.plain()),
                Arguments.of("llama qkv-bias tied", TestModels.llamaTied(), TestModels.Options.plain().withAttentionBias()),
                Arguments.of("gpt2", TestModels.gpt2(), TestModels.Options.plain()),
                Arguments.of("gpt2 untied head", TestModels.gpt2(), TestModels.Options.plain().withUntiedHead()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void sameGreedyTokensAsTheExecutor(String name, ModelConfig config, TestModels.Options options) throws Exception {
        Path model = TestModels.write(config, options, 21, dir.resolve("model"));
        long[] prompt = new Random(4).longs(6, 0, config.vocabSize()).toArray();
        int newTokens = 12;
        long[] expected = new long[newTokens];
        try (Pipeline p = Pipeline.whole(config, model)) {
            float[] logits = p.step(List.of(new SequenceChunk("s", 0, prompt.length)), prompt).toFloats();
            for (int i = 0; i < newTokens; i++) {
                expected[i] = Pipeline.argMax(logits, 0, logits.length);
                if (i + 1 < newTokens) {
                    logits = p.step(List.of(new SequenceChunk("s", prompt.length + i, 1)), new long[]{expected[i]}).toFloats();
                }
            }
        }
        try (PlainDjlLoop loop = PlainDjlLoop.load(model, ExecutorOptions.cpu())) {
            PlainDjlLoop.Run run = loop.generate(prompt, newTokens);
            assertThat(run.tokens()).containsExactly(expected);
            assertThat(run.decodeTokensPerSecond()).isPositive();
            // The loop keeps no state between runs.
            assertThat(loop.greedy(prompt, newTokens)).containsExactly(expected);
        }
    }

    /** Random continuation tokens (greedy output of a random model can repeat) through both caches. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void sameLogitsOverPrefillAndCachedDecode(String name, ModelConfig config, TestModels.Options options) throws Exception {
        Path model = TestModels.write(config, options, 22, dir.resolve("model"));
        Random rnd = new Random(8);
        long[] prompt = rnd.longs(6, 0, config.vocabSize()).toArray();
        long[] next = rnd.longs(5, 0, config.vocabSize()).toArray();
        try (Pipeline p = Pipeline.whole(config, model); PlainDjlLoop loop = PlainDjlLoop.load(model, ExecutorOptions.cpu())) {
            List<float[]> plain = loop.teacherForced(prompt, next);
            assertClose(plain.get(0), p.step(List.of(new SequenceChunk("s", 0, prompt.length)), prompt).toFloats());
            for (int i = 0; i < next.length; i++) {
                float[] executor = p.step(List.of(new SequenceChunk("s", prompt.length + i, 1)), new long[]{next[i]}).toFloats();
                assertClose(plain.get(i + 1), executor);
            }
        }
    }

    private static void assertClose(float[] plain, float[] executor) {
        assertThat(plain).hasSameSizeAs(executor);
        double maxDiff = 0;
        for (int i = 0; i < plain.length; i++) {
            maxDiff = Math.max(maxDiff, Math.abs(plain[i] - executor[i]));
        }
        assertThat(maxDiff).isLessThanOrEqualTo(1e-4);
    }
}
