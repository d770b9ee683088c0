package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.common.tensor.SliceTree;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.time.Duration;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A model's layers computed by head shards (docs/sharding.md, "Head parallelism"): k = 1, 2, 3 and 4 shards, each
 * loading only its slices, their partials merged by the slice tree in seeded random arrival orders, between an
 * embedding stage and a head stage. Every k gives the same logits bit for bit, step after step (a batched prefill of two
 * sequences, then batched decode steps writing the shards' KV caches); against one stage computing whole layers the
 * greedy tokens are the same and the logits within float32 rounding. With k > 1 a shard fails once at the third step:
 * the step fails naming it, and computed again (the caches written again at the same positions) gives the same bits.
 */
class HeadShardsEqualAcrossShardsTest {

    /** Llama, 2 layers, 8 query heads over 4 key/value heads (4 slices), an MLP of 70 columns (not a multiple of 4). */
    static final ModelConfig LLAMA = new ModelConfig(Architecture.LLAMA, 2, 64, 8, 4, 70, 128, 64, 1e-5, 10000.0, false,
            1, 2);

    /** {@link #LLAMA} with an MLP of 64 columns (16 a slice): its slices are computed by the native kernels. */
    static final ModelConfig LLAMA_NATIVE = new ModelConfig(Architecture.LLAMA, 2, 64, 8, 4, 64, 128, 64, 1e-5, 10000.0,
            false, 1, 2);

    @TempDir
    Path dir;

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("llama", LLAMA, ModelFixtures.weightsOnly()),
                Arguments.of("qwen2 (q/k/v biases)", LLAMA, ModelFixtures.weightsOnly().withAttentionBias(true)),
                Arguments.of("qwen3 (q/k norms)", LLAMA.withQkNormAndExperts(true, null), ModelFixtures.weightsOnly()),
                Arguments.of("llama, native kernels", LLAMA_NATIVE, ModelFixtures.weightsOnly()),
                Arguments.of("qwen2 (q/k/v biases), native kernels", LLAMA_NATIVE,
                        ModelFixtures.weightsOnly().withAttentionBias(true)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("models")
    void everyNumberOfShardsGivesTheSameBits(String name, ModelConfig config, ModelGenerator.Options options)
            throws Exception {
        Path file = ModelFixtures.write(config, options, 17, dir.resolve("model")).resolve("model.safetensors");
        List<long[]> inputs = new ArrayList<>();
        List<float[]> whole;
        try (DjlPartitionExecutor stage = DjlPartitionExecutor.load(PartitionSpec.whole(config), List.of(file),
                ExecutorOptions.cpu())) {
            whole = run((batch, ids) -> stage.forward(batch, new StageInput.Tokens(ids)).toFloats(), config, inputs);
        }
        List<float[]> first = null;
        double worst = 0;
        for (int k = 1; k <= config.numKvHeads(); k++) {
            try (Sharded sharded = new Sharded(config, file, k, new Random(100 + k), k > 1 ? 3 : 0)) {
                assertThat(sharded.shards).allSatisfy(shard -> assertThat(shard.onNativeKernels())
                        .as("slices on the native kernels").isEqualTo(name.endsWith("native kernels")
                                && io.butterfly.worker.engine.cpu.NativeKernels.available()));
                List<float[]> logits = run(sharded::step, config, inputs);
                for (int step = 0; step < whole.size(); step++) {
                    float[] expected = whole.get(step);
                    float[] actual = logits.get(step);
                    if (first != null) {
                        assertThat(actual).as("k = %d, step %d: the bits of k = 1", k, step)
                                .isEqualTo(first.get(step));
                    }
                    int v = config.vocabSize();
                    for (int row = 0; row < expected.length / v; row++) {
                        assertThat(Pipeline.argMax(actual, row * v, (row + 1) * v)).as("k = %d, step %d, sequence %d",
                                k, step, row).isEqualTo(Pipeline.argMax(expected, row * v, (row + 1) * v));
                    }
                    double scale = 0;
                    double diff = 0;
                    for (int i = 0; i < expected.length; i++) {
                        scale = Math.max(scale, Math.abs(expected[i]));
                        diff = Math.max(diff, Math.abs(expected[i] - actual[i]));
                    }
                    worst = Math.max(worst, diff / scale);
                }
                first = first == null ? logits : first;
            }
        }
        System.out.printf("%s: head shards vs whole layers, largest logit difference %.3g of the largest logit%n",
                name, worst);
        assertThat(worst).as("largest logit difference from whole layers, relative to the largest logit")
                .isLessThan(1e-5);
    }

    @Test
    void aShardRefusesWhatItDoesNotHold() throws Exception {
        Path file = ModelFixtures.write(LLAMA, ModelFixtures.weightsOnly(), 17, dir.resolve("model"))
                .resolve("model.safetensors");
        assertThatThrownBy(() -> HeadShard.load(LLAMA, 0, 2, new SliceTree.Range(1, 3), List.of(file),
                ExecutorOptions.cpu())).hasMessageContaining("not a subtree");
        assertThatThrownBy(() -> HeadShard.load(ModelFixtures.mixtral(), 0, 2, new SliceTree.Range(0, 1), List.of(file),
                ExecutorOptions.cpu())).hasMessageContaining("with experts");
        assertThatThrownBy(() -> new HeadParallelLayers(LLAMA, 0, 2, List.of(new SliceTree.Range(0, 1),
                new SliceTree.Range(2, 4)), null, Duration.ofSeconds(1))).hasMessageContaining("do not cover");
        try (HeadShard shard = HeadShard.load(LLAMA, 1, 2, new SliceTree.Range(2, 4), List.of(file),
                ExecutorOptions.cpu())) {
            float[] row = new float[LLAMA.hiddenSize()];
            assertThatThrownBy(() -> shard.mlp(0, row)).hasMessageContaining("layer 0 is not in this shard's [1, 2)");
            assertThatThrownBy(() -> shard.mlp(1, new float[5])).hasMessageContaining("are not rows of 64");
            assertThatThrownBy(() -> shard.attention(1, List.of(new SequenceChunk("a", 0, 2)), row))
                    .hasMessageContaining("the batch has 2 tokens, the input 1 rows");
            assertThat(shard.attention(1, List.of(new SequenceChunk("a", 0, 1)), row)).hasSize(LLAMA.hiddenSize());
        }
    }

    interface Stepper {
        float[] step(List<SequenceChunk> batch, long[] ids);
    }

    /**
     * An embedding stage, the layers by {@code k} head shards ({@link HeadParallelLayers}, their answers arriving in
     * seeded random orders), a head stage. With {@code failAt} > 0, shard 1's MLP fails once at that step's last layer:
     * the step fails naming it, and is computed again.
     */
    private static final class Sharded implements AutoCloseable, HeadExchange {
        final ModelConfig config;
        final DjlPartitionExecutor embedding;
        final DjlPartitionExecutor head;
        final List<HeadShard> shards = new ArrayList<>();
        final HeadParallelLayers layers;
        final Random arrivals;
        final List<CompletableFuture<float[]>> asked = new ArrayList<>();
        final List<float[]> answers = new ArrayList<>();
        final int failAt;
        int steps;
        boolean failed;

        Sharded(ModelConfig config, Path file, int k, Random arrivals, int failAt) throws Exception {
            this.config = config;
            this.arrivals = arrivals;
            this.failAt = failAt;
            int n = config.numLayers();
            List<SliceTree.Range> cut = new SliceTree(config.numKvHeads()).cut(k);
            embedding = DjlPartitionExecutor.load(new PartitionSpec(config, 0, 0, true, false), List.of(file),
                    ExecutorOptions.cpu());
            head = DjlPartitionExecutor.load(new PartitionSpec(config, n, n, false, true), List.of(file),
                    ExecutorOptions.cpu());
            for (SliceTree.Range r : cut) {
                shards.add(HeadShard.load(config, 0, n, r, List.of(file), ExecutorOptions.cpu()));
            }
            layers = new HeadParallelLayers(config, 0, n, cut, this, Duration.ofMinutes(2));
        }

        float[] step(List<SequenceChunk> batch, long[] ids) {
            steps++;
            float[] x = embedding.forward(batch, new StageInput.Tokens(ids)).toFloats();
            float[] out;
            if (steps == failAt) {
                assertThatThrownBy(() -> layers.forward(batch, x)).isInstanceOf(HeadShardUnavailableException.class)
                        .hasMessageContaining("head shard 1 did not answer for layer " + (config.numLayers() - 1));
                assertThat(failed).isTrue();
            }
            out = layers.forward(batch, x);
            ByteBuffer hidden = ByteBuffer.allocate(out.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            hidden.asFloatBuffer().put(out);
            return head.forward(batch, new StageInput.Hidden(hidden)).toFloats();
        }

        @Override
        public CompletableFuture<float[]> attention(int shard, int layer, List<SequenceChunk> batch, float[] x) {
            return arrive(shards.get(shard).attention(layer, batch, x));
        }

        @Override
        public CompletableFuture<float[]> mlp(int shard, int layer, float[] x) {
            boolean fail = steps == failAt && !failed && shard == 1 && layer == config.numLayers() - 1;
            failed |= fail;
            return arrive(fail ? null : shards.get(shard).mlp(layer, x));
        }

        /** Once every shard was asked, their answers arrive in a random order (a null one as a failure). */
        private CompletableFuture<float[]> arrive(float[] answer) {
            CompletableFuture<float[]> f = new CompletableFuture<>();
            asked.add(f);
            answers.add(answer);
            if (asked.size() == shards.size()) {
                List<Integer> order = new ArrayList<>(IntStream.range(0, asked.size()).boxed().toList());
                Collections.shuffle(order, arrivals);
                for (int i : order) {
                    if (answers.get(i) == null) {
                        asked.get(i).completeExceptionally(new java.io.IOException("UNAVAILABLE: shard " + i + " is gone"));
                    } else {
                        asked.get(i).complete(answers.get(i));
                    }
                }
                asked.clear();
                answers.clear();
            }
            return f;
        }

        @Override
        public void close() {
            shards.forEach(HeadShard::close);
            embedding.close();
            head.close();
        }
    }

    /** Two sequences: a batched prefill (5 and 3 tokens), then 5 batched decode steps of the recorded (greedy) ids. */
    private static List<float[]> run(Stepper p, ModelConfig config, List<long[]> record) {
        boolean recording = record.isEmpty();
        Random rnd = new Random(9);
        List<float[]> outputs = new ArrayList<>();
        long[] ids = recording ? rnd.longs(8, 0, config.vocabSize()).toArray() : record.get(0);
        List<SequenceChunk> batch = List.of(new SequenceChunk("a", 0, 5), new SequenceChunk("b", 0, 3));
        for (int step = 0; step < 6; step++) {
            if (recording) {
                record.add(ids);
            }
            float[] logits = p.step(batch, ids);
            outputs.add(logits);
            int v = config.vocabSize();
            long[] greedy = {Pipeline.argMax(logits, 0, v), Pipeline.argMax(logits, v, 2 * v)};
            ids = !recording && step + 1 < record.size() ? record.get(step + 1) : greedy;
            batch = List.of(new SequenceChunk("a", 5 + step, 1), new SequenceChunk("b", 3 + step, 1));
        }
        return outputs;
    }
}
