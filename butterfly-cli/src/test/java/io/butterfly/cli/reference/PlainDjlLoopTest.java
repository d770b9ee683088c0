package io.butterfly.cli.reference;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.RopeScaling;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.worker.engine.DjlPartitionExecutor;
import io.butterfly.worker.engine.ExecutorOptions;
import io.butterfly.worker.engine.PartitionSpec;
import io.butterfly.worker.engine.SequenceChunk;
import io.butterfly.worker.engine.StageInput;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The benchmark's plain DJL loop computes what the worker's partition executor computes, on the generator's models. */
class PlainDjlLoopTest {

    @TempDir
    Path dir;

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("llama gqa", llamaGqa(null), false),
                Arguments.of("llama gqa, llama3 rope scaling", llamaGqa(RopeScaling.llama3(8.0, 1.0, 4.0, 64)), false),
                Arguments.of("llama qkv-bias tied",
                        new ModelConfig(Architecture.LLAMA, 4, 48, 4, 2, 80, 300, 64, 1e-6, 500.0, true, 1, 2), true),
                Arguments.of("gpt2", gpt2(true), false),
                Arguments.of("gpt2 untied head", gpt2(false), false));
    }

    /**
     * Llama with grouped-query attention: 4 heads sharing 2 kv heads, untied head. With head dim 16 and theta 10^4 the
     * wavelengths run from 6 to 2*10^4 positions; llama3 scaling over an original context of 64 (bands at 16 and 64)
     * keeps one frequency, interpolates two and divides five.
     */
    private static ModelConfig llamaGqa(RopeScaling scaling) {
        return new ModelConfig(Architecture.LLAMA, 4, 64, 4, 2, 96, 300, 160, 1e-5, 10000.0, false, 1, 2, scaling);
    }

    private static ModelConfig gpt2(boolean tiedHead) {
        return new ModelConfig(Architecture.GPT2, 4, 64, 4, 4, 256, 300, 64, 1e-5, 0, tiedHead, -1, -1);
    }

    private Path write(ModelConfig config, boolean attentionBias, long seed) throws Exception {
        Path model = dir.resolve("model");
        ModelGenerator.generate(config, seed, model, attentionBias);
        return model;
    }

    private static DjlPartitionExecutor whole(Path model) throws Exception {
        return DjlPartitionExecutor.load(PartitionSpec.whole(ModelConfig.read(model.resolve("config.json"))),
                List.of(model.resolve("model.safetensors")), ExecutorOptions.cpu());
    }

    private static float[] step(DjlPartitionExecutor executor, int position, long[] ids) {
        return executor.forward(List.of(new SequenceChunk("s", position, ids.length)), new StageInput.Tokens(ids)).toFloats();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void sameGreedyTokensAsTheExecutor(String name, ModelConfig config, boolean attentionBias) throws Exception {
        Path model = write(config, attentionBias, 21);
        long[] prompt = new Random(4).longs(6, 0, config.vocabSize()).toArray();
        int newTokens = 12;
        long[] expected = new long[newTokens];
        try (DjlPartitionExecutor executor = whole(model)) {
            float[] logits = step(executor, 0, prompt);
            for (int i = 0; i < newTokens; i++) {
                float[] l = logits;
                expected[i] = IntStream.range(0, l.length).reduce((a, b) -> l[b] > l[a] ? b : a).orElseThrow();
                if (i + 1 < newTokens) {
                    logits = step(executor, prompt.length + i, new long[]{expected[i]});
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
    void sameLogitsOverPrefillAndCachedDecode(String name, ModelConfig config, boolean attentionBias) throws Exception {
        Path model = write(config, attentionBias, 22);
        Random rnd = new Random(8);
        long[] prompt = rnd.longs(6, 0, config.vocabSize()).toArray();
        long[] next = rnd.longs(5, 0, config.vocabSize()).toArray();
        try (DjlPartitionExecutor executor = whole(model); PlainDjlLoop loop = PlainDjlLoop.load(model, ExecutorOptions.cpu())) {
            List<float[]> plain = loop.teacherForced(prompt, next);
            assertClose(plain.get(0), step(executor, 0, prompt));
            for (int i = 0; i < next.length; i++) {
                assertClose(plain.get(i + 1), step(executor, prompt.length + i, new long[]{next[i]}));
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
