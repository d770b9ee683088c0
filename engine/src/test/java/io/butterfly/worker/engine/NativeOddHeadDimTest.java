package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.model.generate.ModelGenerator;
import io.butterfly.testsupport.ModelFixtures;
import io.butterfly.worker.engine.cpu.NativeKernels;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.assertj.core.data.Offset;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The native kernels on float32 weights of a model whose head dim is not a multiple of 8: {@link ModelFixtures#llamaTied()}
 * (hidden 48 over 4 heads, 12 a head; 2 kv heads), with q/k/v biases and the head tied to the embedding. The kernels'
 * attention took a head's values 8 at a time, so on 12 it read past the query and the key and wrote past its head's
 * output: SplitEqualsWholeTest's split [0, 2, 4] of this model gave other logits than the whole model (issue 50), and
 * the logits were not the model's. Now the logits agree with libtorch's within {@link QuantizedStageTest#TOLERANCE}
 * (the same greedy tokens), and every split, any number of threads and the portable kernels give the whole model's bits.
 */
class NativeOddHeadDimTest {

    @TempDir
    Path dir;

    @Test
    void aHeadDimOfTwelveGivesTheReferenceLogitsAndTheSameBitsOnEverySplit() throws Exception {
        assumeTrue(NativeKernels.available(), () -> "native kernels: " + NativeKernels.loadError().orElse(""));
        ModelConfig config = ModelFixtures.llamaTied();
        assertThat(config.headDim() % 8).isNotZero();
        ModelGenerator.Options options = ModelFixtures.weightsOnly().withAttentionBias(true);
        Path model = ModelFixtures.write(config, options, 11, dir.resolve("model"));
        Path shards = ModelFixtures.write(config, options.withPerLayerFiles(), 11, dir.resolve("shards"));
        ExecutorOptions nativeKernels = ExecutorOptions.cpu().withKernels(CpuKernels.NATIVE);

        List<long[]> inputs = new ArrayList<>();
        List<float[]> reference;
        try (Pipeline torch = Pipeline.whole(config, model, ExecutorOptions.cpu().withKernels(CpuKernels.TORCH))) {
            assertThat(torch.stages().get(0).projections()).doesNotStartWith("native");
            reference = run(torch, config, inputs, null);
        }
        List<float[]> whole;
        try (Pipeline p = Pipeline.whole(config, model, nativeKernels)) {
            assertThat(p.stages().get(0).projections()).startsWith("native");
            whole = run(p, config, null, inputs);
        }
        for (int step = 0; step < reference.size(); step++) {
            float[] e = reference.get(step);
            float[] a = whole.get(step);
            double largest = 0;
            for (float v : e) {
                largest = Math.max(largest, Math.abs(v));
            }
            for (int i = 0; i < e.length; i++) {
                assertThat((double) a[i]).as("step %d logit %d", step, i)
                        .isCloseTo(e[i], Offset.offset(QuantizedStageTest.TOLERANCE * largest));
            }
            int v = config.vocabSize();
            for (int row = 0; row < 2; row++) {
                assertThat(Pipeline.argMax(a, row * v, (row + 1) * v)).as("step %d row %d", step, row)
                        .isEqualTo(Pipeline.argMax(e, row * v, (row + 1) * v));
            }
        }

        for (int[] bounds : new int[][]{{0, 2, 4}, {0, 1, 3, 4}, {0, 0, 2, 4, 4}}) {
            try (Pipeline p = Pipeline.split(config, bounds, shards, nativeKernels)) {
                assertSameBits(whole, run(p, config, null, inputs), "split " + Arrays.toString(bounds));
            }
        }
        for (int threads : new int[]{1, 3}) {
            ExecutorOptions withThreads = new ExecutorOptions("cpu", threads, 0).withKernels(CpuKernels.NATIVE);
            try (Pipeline p = Pipeline.whole(config, model, withThreads)) {
                assertSameBits(whole, run(p, config, null, inputs), threads + " threads");
            }
        }
        NativeKernels.forcePortable(true);
        try (Pipeline p = Pipeline.whole(config, model, nativeKernels)) {
            assertSameBits(whole, run(p, config, null, inputs), "portable kernels");
        } finally {
            NativeKernels.forcePortable(false);
        }
    }

    private static void assertSameBits(List<float[]> expected, List<float[]> actual, String what) {
        assertThat(actual).hasSameSizeAs(expected);
        for (int step = 0; step < expected.size(); step++) {
            assertThat(actual.get(step)).as("%s, step %d", what, step).isEqualTo(expected.get(step));
        }
    }

    /**
     * Two sequences (seeded random prompts of 7 and 3 tokens) prefilled in one step, then greedy decode steps of both;
     * the inputs are recorded on the first run and replayed on the others.
     */
    private static List<float[]> run(Pipeline p, ModelConfig config, List<long[]> record, List<long[]> replay) {
        Random random = new Random(3);
        List<float[]> logits = new ArrayList<>();
        long[] ids = replay != null ? replay.get(0) : random.longs(10, 0, config.vocabSize()).toArray();
        List<SequenceChunk> batch = List.of(new SequenceChunk("a", 0, 7), new SequenceChunk("b", 0, 3));
        for (int step = 0; step < 6; step++) {
            if (record != null) {
                record.add(ids);
            }
            float[] out = p.step(batch, ids).toFloats();
            logits.add(out);
            int v = config.vocabSize();
            long[] greedy = {Pipeline.argMax(out, 0, v), Pipeline.argMax(out, v, 2 * v)};
            ids = replay != null && step + 1 < replay.size() ? replay.get(step + 1) : greedy;
            batch = List.of(new SequenceChunk("a", 7 + step, 1), new SequenceChunk("b", 3 + step, 1));
        }
        return logits;
    }
}
