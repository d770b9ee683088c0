package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.common.tensor.SliceTree;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A whole model as one head-parallel stage (docs/sharding.md, "Head parallelism"): its embedding, its own shard and
 * its head here, the other shard asked through {@link RemoteHeads} (here a shard of this process standing in for the
 * other worker): a batched prefill and decode steps give the greedy tokens of one stage computing whole layers, and
 * the logits within float32 rounding of it; a sequence released on the stage is released on the other shard with
 * the next call to it.
 */
class HeadParallelStageTest {

    @TempDir
    Path dir;

    @Test
    void twoShardsGiveTheTokensOfWholeLayersAndReleaseOnTheOtherShard() throws Exception {
        ModelConfig config = HeadShardsEqualAcrossShardsTest.LLAMA;
        Path file = ModelFixtures.write(config, ModelFixtures.weightsOnly(), 21, dir.resolve("model"))
                .resolve("model.safetensors");
        List<SliceTree.Range> cut = new SliceTree(config.numKvHeads()).cut(2);
        HeadPlacement placement = new HeadPlacement(List.of(new HeadPlacement.Holder("w0", "h", 1, cut.get(0)),
                new HeadPlacement.Holder("w1", "h", 2, cut.get(1))), 0);
        List<List<String>> releasedSeen = new ArrayList<>();
        try (DjlPartitionExecutor whole = DjlPartitionExecutor.load(PartitionSpec.whole(config), List.of(file),
                ExecutorOptions.cpu());
             HeadShard other = HeadShard.load(config, 0, config.numLayers(), cut.get(1), List.of(file),
                     ExecutorOptions.cpu());
             HeadParallelStage stage = HeadParallelStage.load(PartitionSpec.whole(config), placement,
                     () -> List.of(SafetensorsFile.open(file)), ExecutorOptions.cpu(), new RemoteHeads() {
                         @Override
                         public CompletableFuture<float[]> attention(HeadPlacement.Holder shard, int layer,
                                                                     List<SequenceChunk> batch, int rows, float[] x,
                                                                     List<String> released) {
                             assertThat(shard.nodeId()).isEqualTo("w1");
                             assertThat(x).hasSize(rows * config.hiddenSize());
                             releasedSeen.add(released);
                             released.forEach(other::release);
                             return CompletableFuture.supplyAsync(() -> other.attention(layer, batch, x));
                         }

                         @Override
                         public CompletableFuture<float[]> mlp(HeadPlacement.Holder shard, int layer, int rows,
                                                               float[] x) {
                             return CompletableFuture.supplyAsync(() -> other.mlp(layer, x));
                         }
                     })) {
            Random rnd = new Random(5);
            long[] ids = rnd.longs(8, 0, config.vocabSize()).toArray();
            List<SequenceChunk> batch = List.of(new SequenceChunk("a", 0, 5), new SequenceChunk("b", 0, 3));
            int v = config.vocabSize();
            for (int step = 0; step < 5; step++) {
                float[] expected = whole.forward(batch, new StageInput.Tokens(ids)).toFloats();
                float[] actual = stage.forward(batch, new StageInput.Tokens(ids)).toFloats();
                assertThat(actual).hasSameSizeAs(expected);
                double scale = 0;
                double diff = 0;
                for (int i = 0; i < expected.length; i++) {
                    scale = Math.max(scale, Math.abs(expected[i]));
                    diff = Math.max(diff, Math.abs(expected[i] - actual[i]));
                }
                assertThat(diff / scale).as("step %d: relative logit difference", step).isLessThan(1e-5);
                long a = Pipeline.argMax(actual, 0, v);
                long b = Pipeline.argMax(actual, v, 2 * v);
                assertThat(new long[]{a, b}).as("step %d greedy", step)
                        .isEqualTo(new long[]{Pipeline.argMax(expected, 0, v), Pipeline.argMax(expected, v, 2 * v)});
                ids = new long[]{a, b};
                batch = List.of(new SequenceChunk("a", 5 + step, 1), new SequenceChunk("b", 3 + step, 1));
            }
            assertThat(other.cachedSequences()).isEqualTo(2);
            stage.release("a");
            whole.release("a");
            assertThat(stage.cachedSequences()).as("this worker's shard freed it").isEqualTo(1);
            stage.forward(List.of(new SequenceChunk("b", 7, 1)), new StageInput.Tokens(new long[]{ids[1]}));
            assertThat(releasedSeen.get(releasedSeen.size() - config.numLayers())).containsExactly("a");
            assertThat(releasedSeen.get(releasedSeen.size() - 1)).isEmpty();
            assertThat(other.cachedSequences()).as("the other shard freed it").isEqualTo(1);
        }
    }
}
