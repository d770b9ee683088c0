package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.butterfly.common.hash.Xxh64;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.testsupport.ModelFixtures;
import io.butterfly.worker.engine.cpu.NativeKernels;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * On the native kernels with float32 weights (kernels NATIVE) a prompt prefilled as one chunk and as several (8 + 1, 3 + 3 + 3,
 * seeded random cuts) gives the same bits: every stage's hidden rows through the prompt, the logits at its end, and the
 * output of each greedy decode step after it, whose XXH64 is the stage hash a worker reports for it. Audits, referees
 * and resume by replay rely on it: they feed a sequence's history as one chunk where the serving worker computed it in
 * steps (docs/verified-execution.md). libtorch's oneDNN products did not hold it on float32 (a GEMM sums differently for
 * different row counts); the native kernels give a row the same bits whatever rows share its step. On one stage, two
 * and three. (AUTO picks the native kernels for float32 stages they compute, so this holds there by default.)
 */
class ChunkedPrefillBitIdentityTest {

    private static final int DECODES = 3;

    @TempDir
    Path dir;

    @Test
    void aPromptInAnyChunksGivesTheBitsOfOneChunk() throws Exception {
        assumeTrue(NativeKernels.available(), () -> "native kernels: " + NativeKernels.loadError().orElse(""));
        ModelConfig config = ModelFixtures.llamaGqa();
        Path shards = ModelFixtures.write(config, ModelFixtures.weightsOnly().withPerLayerFiles(), 17, dir.resolve("m"));
        // Native kernels; prefix caching off so that each run computes its whole prompt in the chunks given.
        ExecutorOptions options = ExecutorOptions.cpu().withKernels(CpuKernels.NATIVE).withPrefixCaching(false);
        for (int[] bounds : new int[][]{{0, 4}, {0, 2, 4}, {0, 1, 3, 4}}) {
            try (Pipeline pipeline = Pipeline.split(config, bounds, shards, options)) {
                assertThat(pipeline.stages()).allSatisfy(s -> assertThat(s.projections()).startsWith("native"));
                Random random = new Random(bounds.length);
                long[] nine = random.longs(9, 0, config.vocabSize()).toArray();
                Run whole = run(pipeline.stages(), "nine", nine, new int[]{9});
                for (int[] chunks : new int[][]{{8, 1}, {3, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1, 1}}) {
                    whole.assertSameBits(run(pipeline.stages(), "nine", nine, chunks), bounds, chunks);
                }
                for (int round = 0; round < 4; round++) {
                    long[] prompt = random.longs(10 + random.nextInt(60), 0, config.vocabSize()).toArray();
                    Run one = run(pipeline.stages(), "r" + round, prompt, new int[]{prompt.length});
                    int[] chunks = randomCuts(prompt.length, random);
                    one.assertSameBits(run(pipeline.stages(), "r" + round, prompt, chunks), bounds, chunks);
                }
            }
        }
    }

    /** At least two chunks summing to {@code n}. */
    private static int[] randomCuts(int n, Random random) {
        List<Integer> sizes = new ArrayList<>();
        for (int left = n; left > 0; ) {
            int size = sizes.isEmpty() ? 1 + random.nextInt(left - 1) : 1 + random.nextInt(left);
            sizes.add(size);
            left -= size;
        }
        return sizes.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * What a run computed: per stage but the last, its hidden rows through the prompt, in position order; the logits at
     * the prompt's end; per decode step, each stage's output hash.
     */
    private record Run(List<byte[]> promptRows, float[] promptLogits, List<long[]> decodeHashes) {

        void assertSameBits(Run other, int[] bounds, int[] chunks) {
            String what = "stages " + java.util.Arrays.toString(bounds) + ", chunks " + java.util.Arrays.toString(chunks);
            for (int s = 0; s < promptRows.size(); s++) {
                assertThat(other.promptRows.get(s)).as("%s: stage %d's hidden rows", what, s).isEqualTo(promptRows.get(s));
            }
            assertThat(other.promptLogits).as("%s: logits at the prompt's end", what).isEqualTo(promptLogits);
            for (int d = 0; d < decodeHashes.size(); d++) {
                assertThat(other.decodeHashes.get(d)).as("%s: stage hashes of decode %d", what, d)
                        .isEqualTo(decodeHashes.get(d));
            }
        }
    }

    private static Run run(List<DjlPartitionExecutor> stages, String id, long[] prompt, int[] chunks) {
        List<ByteArrayOutputStream> rows = new ArrayList<>();
        for (int s = 0; s + 1 < stages.size(); s++) {
            rows.add(new ByteArrayOutputStream());
        }
        float[] logits = null;
        int at = 0;
        for (int c = 0; c < chunks.length; c++) {
            boolean last = c == chunks.length - 1;
            long[] ids = java.util.Arrays.copyOfRange(prompt, at, at + chunks[c]);
            List<StageResult> out = step(stages, new SequenceChunk(id, at, chunks[c], 160, !last), ids);
            for (int s = 0; s + 1 < stages.size(); s++) {
                rows.get(s).writeBytes(bytes(out.get(s)));
            }
            if (last) {
                logits = out.get(out.size() - 1).toFloats();
            }
            at += chunks[c];
        }
        List<long[]> hashes = new ArrayList<>();
        float[] next = logits;
        int v = stages.get(stages.size() - 1).spec().config().vocabSize();
        for (int d = 0; d < DECODES; d++) {
            long token = Pipeline.argMax(next, 0, v);
            List<StageResult> out = step(stages, new SequenceChunk(id, at, 1, 160), new long[]{token});
            hashes.add(out.stream().mapToLong(r -> Xxh64.of(bytes(r))).toArray());
            next = out.get(out.size() - 1).toFloats();
            at++;
        }
        stages.forEach(s -> s.release(id));
        return new Run(rows.stream().map(ByteArrayOutputStream::toByteArray).toList(), logits, hashes);
    }

    private static List<StageResult> step(List<DjlPartitionExecutor> stages, SequenceChunk chunk, long[] ids) {
        StageInput input = new StageInput.Tokens(ids);
        List<StageResult> results = new ArrayList<>();
        for (DjlPartitionExecutor stage : stages) {
            StageResult result = stage.forward(List.of(chunk), input);
            results.add(result);
            input = new StageInput.Hidden(Pipeline.wireCopy(result.littleEndianFloats()));
        }
        return results;
    }

    private static byte[] bytes(StageResult result) {
        ByteBuffer b = result.littleEndianFloats().duplicate();
        byte[] out = new byte[b.remaining()];
        b.get(out);
        return out;
    }
}
