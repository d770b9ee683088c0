package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
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
 * Splitting the layers over 2, 3 or 4 stages (hidden states crossing as little-endian float32 bytes,
 * each stage loading only its per-layer shard files) gives the same logits, bit for bit, as one stage
 * over the whole model: over a batched prefill of two sequences and several batched decode steps.
 */
class SplitEqualsWholeTest {

    @TempDir
    Path dir;

    static Stream<Arguments> models() {
        return Stream.of(true, false).flatMap(batchInvariant -> Stream.of(
                Arguments.of("llama gqa", ModelFixtures.llamaGqa(), ModelFixtures.weightsOnly(), batchInvariant),
                Arguments.of("llama qkv-bias tied", ModelFixtures.llamaTied(), ModelFixtures.weightsOnly().withAttentionBias(true),
                        batchInvariant),
                Arguments.of("gpt2", ModelFixtures.gpt2(), ModelFixtures.weightsOnly(), batchInvariant),
                Arguments.of("qwen3", ModelFixtures.qwen3(), ModelFixtures.weightsOnly(), batchInvariant),
                Arguments.of("mixtral", ModelFixtures.mixtral(), ModelFixtures.weightsOnly(), batchInvariant),
                Arguments.of("qwen2-moe", ModelFixtures.qwen2Moe(), ModelFixtures.weightsOnly().withAttentionBias(true),
                        batchInvariant),
                Arguments.of("qwen3-moe", ModelFixtures.qwen3Moe(), ModelFixtures.weightsOnly(), batchInvariant)));
    }

    @ParameterizedTest(name = "{0}, batch-invariant {3}")
    @MethodSource("models")
    void everySplitMatchesTheWholeModelBitForBit(String name, ModelConfig config, ModelGenerator.Options options,
                                                 boolean batchInvariant) throws Exception {
        ExecutorOptions executor = ExecutorOptions.cpu().withBatchInvariant(batchInvariant);
        // The same seed writes the same tensors, once in one file and once in the registry's per-layer files.
        Path model = ModelFixtures.write(config, options, 11, dir.resolve("model"));
        Path shards = ModelFixtures.write(config, options.withPerLayerFiles(), 11, dir.resolve("shards"));
        List<byte[]> expected;
        List<long[]> inputs;
        try (Pipeline whole = Pipeline.whole(config, model, executor)) {
            inputs = new ArrayList<>();
            expected = run(whole, config, inputs, null);
        }
        // The last split has an embedding-only first stage [0, 0) and a head-only last stage [4, 4).
        int[][] splits = {{0, 2, 4}, {0, 1, 3, 4}, {0, 1, 2, 3, 4}, {0, 3, 4}, {0, 0, 2, 4, 4}};
        for (int[] bounds : splits) {
            try (Pipeline split = Pipeline.split(config, bounds, shards, executor)) {
                List<byte[]> actual = run(split, config, null, inputs);
                for (int step = 0; step < expected.size(); step++) {
                    assertThat(actual.get(step)).as("split %s, step %d", java.util.Arrays.toString(bounds), step)
                            .isEqualTo(expected.get(step));
                }
            }
        }
    }

    /**
     * Two sequences: a batched prefill (7 and 3 tokens), then batched greedy decode steps; the inputs
     * are recorded on the first run and replayed on the others so every run sees the same tokens.
     */
    private static List<byte[]> run(Pipeline p, ModelConfig config, List<long[]> record, List<long[]> replay) {
        Random rnd = new Random(3);
        List<byte[]> outputs = new ArrayList<>();
        long[] ids = replay != null ? replay.get(0) : rnd.longs(10, 0, config.vocabSize()).toArray();
        List<SequenceChunk> batch = List.of(new SequenceChunk("a", 0, 7), new SequenceChunk("b", 0, 3));
        for (int step = 0; step < 6; step++) {
            if (record != null) {
                record.add(ids);
            }
            StageResult r = p.step(batch, ids);
            assertThat(r.shape()).containsExactly(2, config.vocabSize());
            outputs.add(Pipeline.bytes(r));
            float[] logits = r.toFloats();
            int v = config.vocabSize();
            long[] greedy = {Pipeline.argMax(logits, 0, v), Pipeline.argMax(logits, v, 2 * v)};
            ids = replay != null && step + 1 < replay.size() ? replay.get(step + 1) : greedy;
            batch = List.of(new SequenceChunk("a", 7 + step, 1), new SequenceChunk("b", 3 + step, 1));
        }
        return outputs;
    }
}
