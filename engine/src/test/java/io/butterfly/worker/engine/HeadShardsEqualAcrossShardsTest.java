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
 * greedy tokens are the same and the logits within float32 rounding.
 */
class HeadShardsEqualAcrossShardsTest {

    /** Llama, 2 layers, 8 query heads over 4 key/value heads (4 slices), an MLP of 70 columns (not a multiple of 4). */
    static final ModelConfig LLAMA = new ModelConfig(Architecture.LLAMA, 2, 64, 8, 4, 70, 128, 64, 1e-5, 10000.0, false,
            1, 2);

    @TempDir
    Path dir;

    static Stream<Arguments> models() {
        return Stream.of(
                Arguments.of("llama", LLAMA, ModelFixtures.weightsOnly()),
                Arguments.of("qwen2 (q/k/v biases)", LLAMA, ModelFixtures.weightsOnly().withAttentionBias(true)),
                Arguments.of("qwen3 (q/k norms)", LLAMA.withQkNormAndExperts(true, null), ModelFixtures.weightsOnly()));
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
            try (Sharded sharded = new Sharded(config, file, k, new Random(100 + k))) {
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

    /** An embedding stage, the layers by {@code k} head shards (merged in random arrival orders), a head stage. */
    private static final class Sharded implements AutoCloseable {
        final ModelConfig config;
        final DjlPartitionExecutor embedding;
        final DjlPartitionExecutor head;
        final List<HeadShard> shards = new ArrayList<>();
        final SliceTree tree;
        final List<SliceTree.Range> cut;
        final Random arrivals;

        Sharded(ModelConfig config, Path file, int k, Random arrivals) throws Exception {
            this.config = config;
            this.arrivals = arrivals;
            this.tree = new SliceTree(config.numKvHeads());
            this.cut = tree.cut(k);
            int layers = config.numLayers();
            embedding = DjlPartitionExecutor.load(new PartitionSpec(config, 0, 0, true, false), List.of(file),
                    ExecutorOptions.cpu());
            head = DjlPartitionExecutor.load(new PartitionSpec(config, layers, layers, false, true), List.of(file),
                    ExecutorOptions.cpu());
            for (SliceTree.Range r : cut) {
                shards.add(HeadShard.load(config, 0, layers, r, List.of(file), ExecutorOptions.cpu()));
            }
        }

        float[] step(List<SequenceChunk> batch, long[] ids) {
            float[] x = embedding.forward(batch, new StageInput.Tokens(ids)).toFloats();
            for (int layer = 0; layer < config.numLayers(); layer++) {
                int l = layer;
                float[] in = x;
                x = plus(x, merged(i -> shards.get(i).attention(l, batch, in), x.length));
                float[] mid = x;
                x = plus(x, merged(i -> shards.get(i).mlp(l, mid), x.length));
            }
            ByteBuffer hidden = ByteBuffer.allocate(x.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            hidden.asFloatBuffer().put(x);
            return head.forward(batch, new StageInput.Hidden(hidden)).toFloats();
        }

        private float[] merged(java.util.function.IntFunction<float[]> partial, int length) {
            SliceTree.Merge merge = tree.merge(cut, length);
            List<Integer> order = new ArrayList<>(IntStream.range(0, cut.size()).boxed().toList());
            Collections.shuffle(order, arrivals);
            for (int i : order) {
                merge.add(i, partial.apply(i));
            }
            return merge.result();
        }

        private static float[] plus(float[] a, float[] b) {
            float[] s = new float[a.length];
            for (int i = 0; i < s.length; i++) {
                s[i] = a[i] + b[i];
            }
            return s;
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
