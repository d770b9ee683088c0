package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.butterfly.common.hash.Xxh64;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.testsupport.ModelFixtures;
import io.butterfly.worker.engine.cpu.NativeKernels;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Per-layer snapshots (docs/verified-execution.md): a native stage asked to show its layers runs them one native call
 * at a time and gives the same bits as one call over all of them; each layer's output is the same bits whatever the
 * split (layer L's output hash on a stage [0, 4) is layer L's on [0, 1) + [1, 3) + [3, 4)); on a stage before the last,
 * the last layer's output is what the stage sends on. Seeded prompts, a prefill and greedy decodes.
 */
class LayerProbeTest {

    @TempDir
    Path dir;

    @Test
    void layerByLayerGivesTheBitsOfOneCallAndTheSameLayerHashesOnAnySplit() throws Exception {
        assumeTrue(NativeKernels.available(), () -> "native kernels: " + NativeKernels.loadError().orElse(""));
        ModelConfig config = ModelFixtures.llamaGqa();
        Path shards = ModelFixtures.write(config, ModelFixtures.weightsOnly().withPerLayerFiles(), 23, dir.resolve("m"));
        ExecutorOptions options = ExecutorOptions.cpu().withKernels(CpuKernels.NATIVE);
        Random random = new Random(5);
        long[] prompt = random.longs(7 + random.nextInt(20), 0, config.vocabSize()).toArray();
        Map<String, Long> firstSplit = null;
        for (int[] bounds : new int[][]{{0, 4}, {0, 1, 3, 4}, {0, 2, 4}}) {
            try (Pipeline pipeline = Pipeline.split(config, bounds, shards, options)) {
                assertThat(pipeline.stages()).allSatisfy(s -> assertThat(s.layerProbes()).isTrue());
                Map<String, Long> plain = new TreeMap<>();
                List<byte[]> plainOut = run(pipeline.stages(), "plain", prompt, config, null);
                Map<String, Long> probed = new TreeMap<>();
                List<byte[]> probedOut = run(pipeline.stages(), "probed", prompt, config, probed);
                for (int i = 0; i < plainOut.size(); i++) {
                    assertThat(probedOut.get(i)).as("split %s, output %d", java.util.Arrays.toString(bounds), i)
                            .isEqualTo(plainOut.get(i));
                }
                assertThat(plain).isEmpty();
                assertThat(probed).hasSize(3 * 4); // three steps, four layers
                if (firstSplit == null) {
                    firstSplit = probed;
                } else {
                    assertThat(probed).as("split %s", java.util.Arrays.toString(bounds)).isEqualTo(firstSplit);
                }
            }
        }
    }

    @Test
    void aStageWithoutNativeLayersRefusesAProbe() throws Exception {
        ModelConfig config = ModelFixtures.llamaGqa();
        Path shards = ModelFixtures.write(config, ModelFixtures.weightsOnly().withPerLayerFiles(), 23, dir.resolve("t"));
        try (Pipeline pipeline = Pipeline.split(config, new int[]{0, 4}, shards,
                ExecutorOptions.cpu().withKernels(CpuKernels.TORCH))) {
            DjlPartitionExecutor stage = pipeline.stages().get(0);
            assertThat(stage.layerProbes()).isFalse();
            assertThatThrownBy(() -> stage.forward(List.of(new SequenceChunk("s", 0, 2, 16)),
                    new StageInput.Tokens(new long[]{1, 2}), (layer, rows) -> { }))
                    .isInstanceOf(UnsupportedOperationException.class);
        }
    }

    /**
     * The prompt, then two greedy decodes, through the stages; with {@code layers} non-null each stage is probed and
     * every layer's output hash recorded under "step/absolute layer". Returns every stage's output of every step.
     */
    private static List<byte[]> run(List<DjlPartitionExecutor> stages, String id, long[] prompt, ModelConfig config,
                                    Map<String, Long> layers) {
        List<byte[]> outputs = new ArrayList<>();
        long[] ids = prompt;
        int position = 0;
        for (int step = 0; step < 3; step++) {
            StageInput input = new StageInput.Tokens(ids);
            SequenceChunk chunk = new SequenceChunk(id, position, ids.length, 64);
            StageResult result = null;
            for (DjlPartitionExecutor stage : stages) {
                int first = stage.spec().layerStart();
                int s = step;
                byte[][] last = new byte[1][];
                LayerProbe probe = layers == null ? null : (layer, rows) -> {
                    byte[] b = bytes(rows);
                    layers.put(s + "/" + (first + layer), Xxh64.of(b));
                    last[0] = b;
                };
                result = stage.forward(List.of(chunk), input, probe);
                byte[] out = bytes(result.littleEndianFloats());
                outputs.add(out);
                if (probe != null && !stage.spec().hasHead()) {
                    assertThat(last[0]).as("the last layer's output is what the stage sends on").isEqualTo(out);
                }
                input = new StageInput.Hidden(Pipeline.wireCopy(result.littleEndianFloats()));
            }
            position += ids.length;
            ids = new long[]{Pipeline.argMax(result.toFloats(), 0, config.vocabSize())};
        }
        stages.forEach(s -> s.release(id));
        return outputs;
    }

    private static byte[] bytes(ByteBuffer buffer) {
        ByteBuffer b = buffer.duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }
}
