package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A sequence whose prompt starts with blocks another sequence left in the prefix cache computes only the rest of its
 * prompt, and its logits, through the prompt and greedy decoding, are bit for bit those of the same sequence on stages
 * without prefix caching: on one stage and on three, over seeded random prompts, prompt lengths and prefill chunks.
 */
class PrefixHitBitIdentityTest {

    @TempDir
    Path dir;

    @Test
    void aHitGivesTheLogitsOfAMissOnOneStageAndOnThree() throws Exception {
        ModelConfig config = ModelFixtures.llamaGqa();
        Path shards = ModelFixtures.write(config, ModelFixtures.weightsOnly().withPerLayerFiles(), 5, dir.resolve("m"));
        for (int[] bounds : new int[][]{{0, 4}, {0, 1, 3, 4}}) {
            try (Pipeline off = Pipeline.split(config, bounds, shards, ExecutorOptions.cpu().withPrefixCaching(false));
                 Pipeline on = Pipeline.split(config, bounds, shards, ExecutorOptions.cpu())) {
                Random random = new Random(bounds.length);
                for (int round = 0; round < 6; round++) {
                    int v = config.vocabSize();
                    long[] shared = random.longs(17 + random.nextInt(40), 0, v).toArray();
                    long[] first = concat(shared, random.longs(1 + random.nextInt(30), 0, v).toArray());
                    long[] second = concat(shared, random.longs(1 + random.nextInt(30), 0, v).toArray());
                    int[] chunks = chunks(second.length, random);
                    // The first sequence leaves the shared blocks in the cache of `on`.
                    run(on.stages(), "first-" + round, first, new int[]{first.length}, 2);
                    List<float[]> hit = run(on.stages(), "second-" + round, second, chunks, 4);
                    List<float[]> miss = run(off.stages(), "second-" + round, second, chunks, 4);
                    assertThat(hit).hasSameSizeAs(miss);
                    for (int i = 0; i < hit.size(); i++) {
                        assertThat(hit.get(i)).as("round %d, logits %d", round, i).isEqualTo(miss.get(i));
                    }
                }
                for (DjlPartitionExecutor stage : on.stages()) {
                    PrefixCacheStats stats = stage.prefixCacheStats();
                    assertThat(stats.hitTokens()).as("every stage restores the shared blocks").isPositive();
                    assertThat(stats.blocks()).isPositive();
                    assertThat(stage.cachedSequences()).isZero();
                }
                for (DjlPartitionExecutor stage : off.stages()) {
                    assertThat(stage.prefixCacheStats()).isEqualTo(PrefixCacheStats.OFF);
                }
            }
        }
    }

    @Test
    void blocksGiveWayToSequencesUnderTheBudget() throws Exception {
        ModelConfig config = ModelFixtures.llamaGqa();
        Path shards = ModelFixtures.write(config, ModelFixtures.weightsOnly().withPerLayerFiles(), 6, dir.resolve("b"));
        long perPosition = io.butterfly.common.model.KvCacheSizing.stageBytesPerPosition(config, 4, true);
        // Room for one sequence of 160 positions and a few blocks: every new prompt evicts older blocks.
        long budget = perPosition * (160 + 3 * PrefixCache.BLOCK_TOKENS);
        try (Pipeline on = Pipeline.split(config, new int[]{0, 4}, shards, new ExecutorOptions("cpu", 0, budget))) {
            Random random = new Random(3);
            DjlPartitionExecutor stage = on.stages().get(0);
            for (int round = 0; round < 8; round++) {
                long[] prompt = random.longs(70, 0, config.vocabSize()).toArray();
                run(on.stages(), "s" + round, prompt, new int[]{prompt.length}, 1);
                assertThat(stage.cachedBytes()).isLessThanOrEqualTo(budget);
            }
            assertThat(stage.prefixCacheStats().evictions()).isPositive();
            assertThat(stage.prefixCacheStats().bytes()).isLessThanOrEqualTo(budget);
        }
    }

    /** Random prefill chunk sizes summing to {@code n}. */
    static int[] chunks(int n, Random random) {
        List<Integer> sizes = new ArrayList<>();
        for (int left = n; left > 0; ) {
            int size = random.nextBoolean() ? left : 1 + random.nextInt(left);
            sizes.add(size);
            left -= size;
        }
        return sizes.stream().mapToInt(Integer::intValue).toArray();
    }

    /** The prompt in the given chunks, then greedy decodes; the logits of every step that samples; then a release. */
    static List<float[]> run(List<DjlPartitionExecutor> stages, String id, long[] prompt, int[] chunks,
                                     int decodes) {
        List<Long> tokens = new ArrayList<>();
        for (long t : prompt) {
            tokens.add(t);
        }
        List<float[]> logits = new ArrayList<>();
        int at = 0;
        for (int c = 0; c < chunks.length; c++) {
            boolean last = c == chunks.length - 1;
            float[] out = step(stages, new SequenceChunk(id, at, chunks[c], 160, !last), slice(tokens, at, chunks[c]));
            if (last) {
                logits.add(out);
            }
            at += chunks[c];
        }
        int v = stages.get(stages.size() - 1).spec().config().vocabSize();
        for (int i = 0; i < decodes; i++) {
            tokens.add(Pipeline.argMax(logits.get(logits.size() - 1), 0, v));
            logits.add(step(stages, new SequenceChunk(id, at, 1, 160), slice(tokens, at, 1)));
            at++;
        }
        stages.forEach(s -> s.release(id));
        return logits;
    }

    private static float[] step(List<DjlPartitionExecutor> stages, SequenceChunk chunk, long[] ids) {
        StageInput input = new StageInput.Tokens(ids);
        StageResult result = null;
        for (DjlPartitionExecutor stage : stages) {
            result = stage.forward(List.of(chunk), input);
            input = new StageInput.Hidden(Pipeline.wireCopy(result.littleEndianFloats()));
        }
        return result.toFloats();
    }

    private static long[] slice(List<Long> tokens, int from, int n) {
        return tokens.subList(from, from + n).stream().mapToLong(Long::longValue).toArray();
    }

    private static long[] concat(long[] a, long[] b) {
        long[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
