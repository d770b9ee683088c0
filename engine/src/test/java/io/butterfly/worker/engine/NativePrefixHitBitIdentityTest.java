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
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link PrefixHitBitIdentityTest} on the native kernels ({@link NativeLlamaStage}): a sequence whose prompt starts
 * with blocks another left in the prefix cache computes only the rest of its prompt, and its logits through the
 * prompt and greedy decoding are bit for bit those of the same sequence on stages without prefix caching, on float32
 * weights and on quantized ones (Q8_0 and Q4_K, the kernels' default 8-bit activations), on one stage, two and four,
 * over seeded random prompts and prefill chunks.
 */
class NativePrefixHitBitIdentityTest {

    @TempDir
    Path dir;

    /** Hidden 256 and intermediate 512 (whole Q4_K super-blocks), four layers to cut in 1, 2 and 4 stages. */
    private static final ModelConfig CONFIG = new ModelConfig(Architecture.LLAMA, 4, 256, 4, 2, 512, 320, 160, 1e-5,
            10000.0, false, 1, 2);

    /** null: float32 weights on the native kernels. */
    static Stream<Arguments> cases() {
        return Stream.of((WeightQuantization) null, WeightQuantization.Q8, WeightQuantization.Q4_K)
                .flatMap(q -> Stream.of(new int[]{0, 4}, new int[]{0, 2, 4}, new int[]{0, 1, 2, 3, 4})
                        .map(bounds -> Arguments.of(q, bounds)));
    }

    @ParameterizedTest(name = "{0}, bounds {1}")
    @MethodSource("cases")
    void aHitGivesTheLogitsOfAMiss(WeightQuantization q, int[] bounds) throws Exception {
        assumeTrue(NativeKernels.available(), () -> "native kernels: " + NativeKernels.loadError().orElse(""));
        Path shards = model(q);
        ExecutorOptions options = ExecutorOptions.cpu().withKernels(CpuKernels.NATIVE);
        try (Pipeline off = Pipeline.split(CONFIG, bounds, shards, options.withPrefixCaching(false));
             Pipeline on = Pipeline.split(CONFIG, bounds, shards, options)) {
            assertThat(on.stages()).allSatisfy(s -> assertThat(s.projections()).startsWith("native"));
            Random random = new Random(31L * bounds.length + (q == null ? 0 : q.ordinal() + 1));
            int v = CONFIG.vocabSize();
            for (int round = 0; round < 3; round++) {
                long[] shared = random.longs(17 + random.nextInt(40), 0, v).toArray();
                long[] first = concat(shared, random.longs(1 + random.nextInt(20), 0, v).toArray());
                long[] second = concat(shared, random.longs(1 + random.nextInt(20), 0, v).toArray());
                int[] chunks = PrefixHitBitIdentityTest.chunks(second.length, random);
                PrefixHitBitIdentityTest.run(on.stages(), "first-" + round, first, new int[]{first.length}, 1);
                List<float[]> hit = PrefixHitBitIdentityTest.run(on.stages(), "second-" + round, second, chunks, 3);
                List<float[]> miss = PrefixHitBitIdentityTest.run(off.stages(), "second-" + round, second, chunks, 3);
                assertThat(hit).hasSameSizeAs(miss);
                for (int i = 0; i < hit.size(); i++) {
                    assertThat(hit.get(i)).as("%s round %d, logits %d", q, round, i).isEqualTo(miss.get(i));
                }
            }
            for (DjlPartitionExecutor stage : on.stages()) {
                assertThat(stage.prefixCacheStats().hitTokens()).as("every stage restores the shared blocks")
                        .isPositive();
            }
        }
    }

    /** The model in per-layer files (a stage loads its own), quantized to {@code q} unless null. */
    private Path model(WeightQuantization q) throws IOException {
        Path source = ModelFixtures.write(CONFIG, ModelFixtures.weightsOnly().withPerLayerFiles(), 13,
                dir.resolve("f32"));
        if (q == null) {
            return source;
        }
        Path out = Files.createDirectories(dir.resolve(q.name()));
        try (Stream<Path> files = Files.list(source)) {
            for (Path f : files.toList()) {
                if (!f.getFileName().toString().endsWith(".safetensors")) {
                    Files.copy(f, out.resolve(f.getFileName()));
                    continue;
                }
                try (SafetensorsFile file = SafetensorsFile.open(f)) {
                    List<ShardQuantizer.Source> tensors = file.tensors().keySet().stream()
                            .map(t -> new ShardQuantizer.Source(t, file)).toList();
                    ShardQuantizer.write(out.resolve(f.getFileName()), tensors, q, CONFIG);
                }
            }
        }
        return out;
    }

    private static long[] concat(long[] a, long[] b) {
        long[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
