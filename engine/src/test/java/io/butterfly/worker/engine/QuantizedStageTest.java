package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.butterfly.common.model.Architecture;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.quant.ShardQuantizer;
import io.butterfly.common.quant.WeightQuantization;
import io.butterfly.common.safetensors.SafetensorsFile;
import io.butterfly.testsupport.ModelFixtures;
import io.butterfly.worker.engine.cpu.NativeKernels;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Stages with quantized weights, computed by the native kernels, against the reference: the float32 math (the
 * TorchScript stages, themselves checked against transformers' formulas) on the same weights dequantized. Greedy
 * tokens are the same and logits agree within {@link #TOLERANCE}; split, batched, and on the portable kernels
 * instead of AVX2 they are the same bit for bit.
 */
class QuantizedStageTest {

    /**
     * Relative to a step's largest logit, with float32 activations (weight-only). What differs from the reference is the
     * order of additions (a product's per block, then across blocks; norms; softmax's exp to a few ulps), a few float32
     * ulps per operation, which three layers of random weights amplify. Measured on these models: at most 1.1e-5 of the
     * largest logit (3.1e-4 on logits up to 28.6), the same as the native kernels on float32 weights against libtorch's
     * (the F32 cases); the bound leaves room for other seeds and models.
     */
    static final double TOLERANCE = 1e-4;

    /**
     * Relative to a step's largest logit, with 8-bit activations, against the reference that rounds them alike. A
     * product is that math to a few ulps (Int8ProductTest), but across a model an input that float32 and double
     * precision put on the two sides of a rounding boundary is rounded one step apart (1/127 of its block's largest),
     * and three layers of random weights amplify such a step as they amplify any (these models' logits move by 10-19%
     * of the largest between 8-bit and float32 activations). Measured: at most 1.9e-2; half of the cases within 4e-7.
     */
    static final double INT8_TOLERANCE = 3e-2;

    @TempDir
    Path dir;

    /** Hidden 256 and intermediate 512: whole Q4_K/Q6_K super-blocks of 256. Untied and tied heads, q/k/v biases. */
    static ModelConfig model(boolean tied) {
        return new ModelConfig(Architecture.LLAMA, 3, 256, 4, 2, 512, 320, 96, 1e-5, 10000.0, tied, 1, 2);
    }

    /** Each quantization, tied and untied heads; null: float32 weights on the native kernels. */
    static Stream<Arguments> cases() {
        return Stream.concat(Stream.of(WeightQuantization.values()), Stream.of((WeightQuantization) null))
                .flatMap(q -> Stream.of(Arguments.of(q, false, false), Arguments.of(q, true, true)));
    }

    @ParameterizedTest(name = "{0}, tied {1}, q/k/v biases {2}")
    @MethodSource("cases")
    void quantizedStagesGiveTheReferenceTokensAndLogits(WeightQuantization q, boolean tied, boolean biases) throws Exception {
        assumeTrue(NativeKernels.available(), () -> "native kernels: " + NativeKernels.loadError().orElse(""));
        ModelConfig config = model(tied);
        Path quantized = quantizedModel(config, q, biases, false);
        ExecutorOptions options = ExecutorOptions.cpu().withKernels(q == null ? CpuKernels.NATIVE : CpuKernels.AUTO)
                .withActivations(Activations.F32);
        try (Pipeline reference = Pipeline.whole(config, quantized, options.withKernels(CpuKernels.TORCH));
             Pipeline kernels = Pipeline.whole(config, quantized, options)) {
            assertThat(kernels.stages().get(0).projections()).startsWith("native");
            assertThat(reference.stages().get(0).projections()).doesNotStartWith("native");
            Run expected = run(reference, config, null);
            Run actual = run(kernels, config, expected.inputs);
            assertThat(actual.tokens).isEqualTo(expected.tokens);
            double worst = 0;
            for (int step = 0; step < expected.logits.size(); step++) {
                float[] e = expected.logits.get(step);
                float[] a = actual.logits.get(step);
                double largest = 0;
                for (float v : e) {
                    largest = Math.max(largest, Math.abs(v));
                }
                for (int i = 0; i < e.length; i++) {
                    worst = Math.max(worst, Math.abs(a[i] - e[i]) / largest);
                    assertThat((double) a[i]).as("%s step %d logit %d", q, step, i).isCloseTo(e[i],
                            org.assertj.core.data.Offset.offset(TOLERANCE * largest));
                }
            }
            System.out.printf("%s, float32 activations: logits within %.2e of the largest%n", q, worst);
        }
    }

    /**
     * With 8-bit activations, the reference is the same float32 math on the dequantized weights with each quantized
     * product's input rounded as the kernels round it ({@link ReferenceModel#withInt8Activations()}, written from the
     * formulas): logits within {@link #INT8_TOLERANCE}, and the same greedy token wherever the reference's two best
     * logits are further apart than that (both fed the kernels' tokens). How far it is from float32 activations is
     * printed (docs/models.md).
     */
    @ParameterizedTest(name = "{0}, tied {1}, q/k/v biases {2}")
    @MethodSource("quantizations")
    void int8ActivationsGiveTheRoundedReferencesTokensAndLogits(WeightQuantization q, boolean tied, boolean biases)
            throws Exception {
        assumeTrue(NativeKernels.available(), () -> "native kernels: " + NativeKernels.loadError().orElse(""));
        ModelConfig config = model(tied);
        Path model = quantizedModel(config, q, biases, false);
        ReferenceModel rounded = new ReferenceModel(config, model.resolve("model.safetensors")).withInt8Activations();
        ReferenceModel exact = new ReferenceModel(config, model.resolve("model.safetensors"));
        Random rnd = new Random(17);
        long[] ids = rnd.longs(7, 0, config.vocabSize()).toArray();
        double worst = 0;
        double fromFloat = 0;
        int compared = 0;
        try (Pipeline p = Pipeline.whole(config, model, ExecutorOptions.cpu().withActivations(Activations.INT8))) {
            assertThat(p.stages().get(0).projections()).contains("int8 activations");
            int position = 0;
            for (int step = 0; step < 8; step++) {
                float[] actual = p.step(List.of(new SequenceChunk("a", position, ids.length)), ids).toFloats();
                double[] expected = rounded.feed(ids);
                double[] unrounded = exact.feed(ids);
                double largest = 0;
                for (double v : expected) {
                    largest = Math.max(largest, Math.abs(v));
                }
                for (int i = 0; i < actual.length; i++) {
                    worst = Math.max(worst, Math.abs(actual[i] - expected[i]) / largest);
                    fromFloat = Math.max(fromFloat, Math.abs(actual[i] - unrounded[i]) / largest);
                }
                long token = Pipeline.argMax(actual, 0, actual.length);
                int best = argMax(expected, -1);
                if (expected[best] - expected[argMax(expected, best)] > INT8_TOLERANCE * largest) {
                    assertThat(token).as("%s step %d", q, step).isEqualTo(best);
                    compared++;
                }
                position += ids.length;
                ids = new long[]{token};
            }
        }
        System.out.printf("%s, int8 activations: logits within %.2e of the rounded reference's largest (%.2e from"
                + " float32 activations'); %d of 8 tokens clear of the tolerance, all the same%n", q, worst, fromFloat,
                compared);
        assertThat(worst).isLessThan(INT8_TOLERANCE);
        assertThat(compared).as("steps whose token is decided beyond the tolerance").isGreaterThanOrEqualTo(4);
    }

    static Stream<Arguments> quantizations() {
        return Stream.of(WeightQuantization.values())
                .flatMap(q -> Stream.of(Arguments.of(q, false, false), Arguments.of(q, true, true)));
    }

    /** The index of the largest value other than {@code except}'s. */
    private static int argMax(double[] v, int except) {
        int best = except == 0 ? 1 : 0;
        for (int i = 0; i < v.length; i++) {
            if (i != except && v[i] > v[best]) {
                best = i;
            }
        }
        return best;
    }

    @Test
    void splitStagesGiveTheWholeModelsLogitsBitForBit() throws Exception {
        assumeTrue(NativeKernels.available());
        ModelConfig config = model(false);
        Path whole = quantizedModel(config, WeightQuantization.Q4_K, true, false);
        Path shards = quantizedModel(config, WeightQuantization.Q4_K, true, true);
        ExecutorOptions options = ExecutorOptions.cpu();
        Run expected;
        try (Pipeline p = Pipeline.whole(config, whole, options)) {
            expected = run(p, config, null);
        }
        for (int[] bounds : new int[][]{{0, 1, 3}, {0, 1, 2, 3}, {0, 0, 3, 3}}) {
            try (Pipeline p = Pipeline.split(config, bounds, shards, options)) {
                Run actual = run(p, config, expected.inputs);
                for (int step = 0; step < expected.logits.size(); step++) {
                    assertThat(actual.logits.get(step)).as("split %s step %d", java.util.Arrays.toString(bounds), step)
                            .isEqualTo(expected.logits.get(step));
                }
            }
        }
    }

    static Stream<Arguments> formats() {
        return Stream.of(WeightQuantization.values())
                .flatMap(q -> Stream.of(Activations.values()).map(a -> Arguments.of(q, a)));
    }

    @ParameterizedTest(name = "{0}, {1} activations")
    @MethodSource("formats")
    void aSequenceGetsTheSameBitsAloneBatchedOnThePortableKernelsAndOnAnyNumberOfThreads(WeightQuantization q,
                                                                                         Activations activations)
            throws Exception {
        assumeTrue(NativeKernels.available());
        ExecutorOptions options = ExecutorOptions.cpu().withActivations(activations);
        ModelConfig config = model(true);
        Path model = quantizedModel(config, q, false, false);
        Random rnd = new Random(5);
        long[] a = rnd.longs(9, 0, config.vocabSize()).toArray();
        long[] b = rnd.longs(4, 0, config.vocabSize()).toArray();
        float[] alone;
        float[] batched;
        float[] portable;
        try (Pipeline p = Pipeline.whole(config, model, options)) {
            alone = p.step(List.of(new SequenceChunk("a", 0, 9)), a).toFloats();
        }
        try (Pipeline p = Pipeline.whole(config, model, options)) {
            long[] both = new long[13];
            System.arraycopy(b, 0, both, 0, 4);
            System.arraycopy(a, 0, both, 4, 9);
            float[] logits = p.step(List.of(new SequenceChunk("b", 0, 4), new SequenceChunk("a", 0, 9)), both).toFloats();
            batched = java.util.Arrays.copyOfRange(logits, config.vocabSize(), 2 * config.vocabSize());
        }
        NativeKernels.forcePortable(true);
        try (Pipeline p = Pipeline.whole(config, model, options)) {
            portable = p.step(List.of(new SequenceChunk("a", 0, 9)), a).toFloats();
        } finally {
            NativeKernels.forcePortable(false);
        }
        assertThat(batched).isEqualTo(alone);
        assertThat(portable).isEqualTo(alone);
        // Threads claim the products' columns in chunks as they go: how many there are changes no bit.
        for (int threads : new int[]{1, 3, 5}) {
            try (Pipeline p = Pipeline.whole(config, model, new ExecutorOptions("cpu", threads, 0).withActivations(activations))) {
                assertThat(p.step(List.of(new SequenceChunk("a", 0, 9)), a).toFloats()).as("%d threads", threads)
                        .isEqualTo(alone);
            }
        }
    }

    /** A model of the generator (seed 11), its matrices quantized as {@code q} says; in per-layer files if asked. */
    private Path quantizedModel(ModelConfig config, WeightQuantization q, boolean biases, boolean perLayer)
            throws IOException {
        var options = ModelFixtures.weightsOnly().withAttentionBias(biases);
        String name = q + "-" + config.tieWordEmbeddings() + "-" + biases + "-" + perLayer;
        Path source = ModelFixtures.write(config, perLayer ? options.withPerLayerFiles() : options, 11,
                dir.resolve("f32-" + name));
        Path out = Files.createDirectories(dir.resolve(name));
        try (Stream<Path> files = Files.list(source)) {
            for (Path f : files.toList()) {
                if (!f.getFileName().toString().endsWith(".safetensors")) {
                    Files.copy(f, out.resolve(f.getFileName()));
                    continue;
                }
                try (SafetensorsFile file = SafetensorsFile.open(f)) {
                    List<ShardQuantizer.Source> tensors = file.tensors().keySet().stream()
                            .map(t -> new ShardQuantizer.Source(t, file)).toList();
                    ShardQuantizer.write(out.resolve(f.getFileName()), tensors, q, config);
                }
            }
        }
        return out;
    }

    private record Run(List<long[]> inputs, List<float[]> logits, List<Long> tokens) {
    }

    /**
     * Two sequences: a batched prefill (7 and 3 tokens), then batched greedy decode steps from the reference's
     * tokens (recorded on its run, replayed on the others, so every run sees the same inputs).
     */
    private static Run run(Pipeline p, ModelConfig config, List<long[]> replay) {
        Random rnd = new Random(3);
        List<long[]> inputs = new ArrayList<>();
        List<float[]> logits = new ArrayList<>();
        List<Long> tokens = new ArrayList<>();
        long[] ids = replay != null ? replay.get(0) : rnd.longs(10, 0, config.vocabSize()).toArray();
        List<SequenceChunk> batch = List.of(new SequenceChunk("a", 0, 7), new SequenceChunk("b", 0, 3));
        int[] positions = {7, 3};
        for (int step = 0; step < 6; step++) {
            inputs.add(ids);
            float[] out = p.step(batch, ids).toFloats();
            logits.add(out);
            int v = config.vocabSize();
            long ta = Pipeline.argMax(out, 0, v);
            long tb = Pipeline.argMax(out, v, 2 * v);
            tokens.add(ta);
            tokens.add(tb);
            ids = replay != null && step + 1 < replay.size() ? replay.get(step + 1) : new long[]{ta, tb};
            batch = List.of(new SequenceChunk("a", positions[0], 1), new SequenceChunk("b", positions[1], 1));
            positions[0]++;
            positions[1]++;
        }
        return new Run(inputs, logits, tokens);
    }
}
