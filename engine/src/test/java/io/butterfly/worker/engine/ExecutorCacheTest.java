package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.ModelConfig;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** KV cache bookkeeping, input validation and native memory of the executor. */
class ExecutorCacheTest {

    @TempDir
    static Path dir;

    private static ModelConfig config;
    private static DjlPartitionExecutor exec;

    @BeforeAll
    static void load() throws Exception {
        config = ModelFixtures.llamaGqa();
        Path model = ModelFixtures.write(config, ModelFixtures.weightsOnly(), 1, dir.resolve("model"));
        exec = DjlPartitionExecutor.load(PartitionSpec.whole(config), List.of(model.resolve("model.safetensors")), ExecutorOptions.cpu());
    }

    @AfterAll
    static void close() {
        exec.close();
    }

    private static StageResult feed(String seq, int position, long... ids) {
        return exec.forward(List.of(new SequenceChunk(seq, position, ids.length)), new StageInput.Tokens(ids));
    }

    @Test
    void chunkPastTheCachedPositionsIsRefusedNamingTheSequence() {
        feed("gap", 0, 1, 2, 3);
        assertThat(exec.cachedLength("gap")).isEqualTo(3);
        assertThatThrownBy(() -> feed("gap", 4, 4)).isInstanceOf(SequenceConflictException.class)
                .hasMessageContaining("'gap'").hasMessageContaining("position 4").hasMessageContaining("3 positions");
        // A refused step leaves the cache as it was.
        assertThat(exec.cachedLength("gap")).isEqualTo(3);
        feed("gap", 3, 4);
        assertThat(exec.cachedLength("gap")).isEqualTo(4);
        exec.release("gap");
    }

    @Test
    void aStepFromAnEarlierPositionIsAnsweredWhenItFeedsWhatWasFedAndComputedAnewWhenNot() {
        feed("rewound", 0, 1, 2, 3);
        // The same tokens again, no logits wanted: answered, nothing computed, the cache as it was.
        long answered = exec.answeredTokens();
        StageResult none = exec.forward(List.of(new SequenceChunk("rewound", 0, 2, 0, true)), new StageInput.Tokens(new long[]{1, 2}));
        assertThat(none.shape()).containsExactly(0, config.vocabSize());
        assertThat(exec.answeredTokens() - answered).isEqualTo(2);
        assertThat(exec.cachedLength("rewound")).isEqualTo(3);
        // Another token at position 2: the cache is rewound there, and the sequence goes on as one fed 1, 2, 9 from
        // the start.
        feed("rewound", 2, 9);
        assertThat(exec.cachedLength("rewound")).isEqualTo(3);
        feed("straight", 0, 1, 2);
        feed("straight", 2, 9);
        assertThat(feed("rewound", 3, 5).toFloats()).isEqualTo(feed("straight", 3, 5).toFloats());
        exec.release("rewound");
        exec.release("straight");
    }

    @Test
    void unknownSequenceMustStartAtZero() {
        assertThatThrownBy(() -> feed("fresh", 5, 1)).isInstanceOf(SequenceConflictException.class)
                .hasMessageContaining("'fresh'").hasMessageContaining("0 positions");
        assertThat(exec.cachedLength("fresh")).isZero();
    }

    @Test
    void releaseDropsTheCacheSoTheSequenceStartsOver() {
        int before = exec.cachedSequences();
        float[] first = feed("again", 0, 5, 6, 7).toFloats();
        assertThat(exec.cachedSequences()).isEqualTo(before + 1);
        exec.release("again");
        assertThat(exec.cachedSequences()).isEqualTo(before);
        assertThat(exec.cachedLength("again")).isZero();
        assertThatThrownBy(() -> feed("again", 3, 8)).isInstanceOf(SequenceConflictException.class);
        // Starting over from position 0 reproduces the first prefill exactly.
        assertThat(feed("again", 0, 5, 6, 7).toFloats()).isEqualTo(first);
        exec.release("again");
        exec.release("never-seen");
        assertThat(exec.cachedSequences()).isEqualTo(before);
    }

    @Test
    void aReleaseThatOvertookTheFirstStepKeepsThatStepFromCreatingAnOrphanCache() {
        int before = exec.cachedSequences();
        exec.release("overtaken"); // the release arrived first, on another stream
        assertThatThrownBy(() -> feed("overtaken", 0, 1, 2)).isInstanceOf(SequenceConflictException.class)
                .hasMessageContaining("released");
        assertThat(exec.cachedSequences()).isEqualTo(before);
    }

    @Test
    void cachesOfSequencesIdleForTooLongAreEvicted() throws Exception {
        feed("busy", 0, 1, 2);
        feed("forgotten", 0, 3, 4);
        // "forgotten" is idle for at least the sleep, longer than the limit whatever the machine does; "busy" only
        // for the moment between its step and the eviction, which a loaded machine (a GC pause, the test thread
        // descheduled) can stretch well past a few milliseconds: the limit leaves it half a second.
        Thread.sleep(600);
        feed("busy", 2, 5);
        assertThat(exec.evictIdle(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(500))).contains("forgotten")
                .doesNotContain("busy");
        assertThat(exec.cachedLength("forgotten")).isZero();
        assertThat(exec.cachedLength("busy")).isEqualTo(3);
        exec.release("busy");
    }

    @Test
    void malformedBatchesAreRefusedWithoutTouchingCaches() {
        int before = exec.cachedSequences();
        assertThatThrownBy(() -> exec.forward(List.of(new SequenceChunk("d", 0, 1), new SequenceChunk("d", 0, 1)),
                new StageInput.Tokens(new long[]{1, 2}))).hasMessageContaining("twice");
        assertThatThrownBy(() -> exec.forward(List.of(new SequenceChunk("n", 0, 3)), new StageInput.Tokens(new long[]{1, 2})))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("2 token ids");
        assertThatThrownBy(() -> exec.forward(List.of(new SequenceChunk("n", 0, 1)), new StageInput.Tokens(new long[]{config.vocabSize()})))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("vocabulary");
        assertThatThrownBy(() -> exec.forward(List.of(new SequenceChunk("n", 0, 1)),
                new StageInput.Hidden(ByteBuffer.allocate(config.hiddenSize() * 4))))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("token ids");
        assertThatThrownBy(() -> exec.forward(List.of(), new StageInput.Tokens(new long[0])))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> exec.forward(List.of(new SequenceChunk("long", 0, config.maxPositions() + 1)),
                new StageInput.Tokens(new long[config.maxPositions() + 1]))).hasMessageContaining("beyond");
        assertThat(exec.cachedSequences()).isEqualTo(before);
    }

    @Test
    void middleStageChecksTheHiddenStateSize() throws Exception {
        Path model = dir.resolve("model");
        PartitionSpec middle = new PartitionSpec(config, 1, 3, false, false);
        try (DjlPartitionExecutor stage = DjlPartitionExecutor.load(middle, List.of(model.resolve("model.safetensors")), ExecutorOptions.cpu())) {
            ByteBuffer twoRows = ByteBuffer.allocate(2 * config.hiddenSize() * 4).order(ByteOrder.LITTLE_ENDIAN);
            assertThatThrownBy(() -> stage.forward(List.of(new SequenceChunk("h", 0, 3)), new StageInput.Hidden(twoRows)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("[3, " + config.hiddenSize() + "]");
            assertThatThrownBy(() -> stage.forward(List.of(new SequenceChunk("h", 0, 1)), new StageInput.Tokens(new long[]{1})))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("hidden states");
            float[] rows = new float[2 * config.hiddenSize()];
            for (int i = 0; i < rows.length; i++) {
                rows[i] = (float) Math.sin(i * 0.37) * 2;
            }
            twoRows.asFloatBuffer().put(rows);
            StageResult out = stage.forward(List.of(new SequenceChunk("h", 0, 2)), new StageInput.Hidden(twoRows));
            assertThat(out.logits()).isFalse();
            assertThat(out.shape()).containsExactly(2, config.hiddenSize());
            assertThat(out.littleEndianFloats().order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
            stage.release("h");
            // The same bytes as a read-only slice at an offset (as gRPC hands them) or in a direct buffer.
            ByteBuffer padded = ByteBuffer.allocate(twoRows.capacity() + 12).order(ByteOrder.LITTLE_ENDIAN);
            padded.position(12);
            padded.put(twoRows.duplicate());
            padded.position(12);
            ByteBuffer readOnly = padded.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
            assertThat(Pipeline.bytes(stage.forward(List.of(new SequenceChunk("h", 0, 2)), new StageInput.Hidden(readOnly))))
                    .isEqualTo(Pipeline.bytes(out));
            stage.release("h");
            ByteBuffer direct = ByteBuffer.allocateDirect(twoRows.capacity()).order(ByteOrder.LITTLE_ENDIAN);
            direct.put(twoRows.duplicate()).flip();
            assertThat(Pipeline.bytes(stage.forward(List.of(new SequenceChunk("h", 0, 2)), new StageInput.Hidden(direct))))
                    .isEqualTo(Pipeline.bytes(out));
        }
    }

    @Test
    void cacheGrowsAcrossCapacityStepsUpToTheModelsMaximumAndStaysExact() throws Exception {
        ReferenceModel reference = new ReferenceModel(config, dir.resolve("model").resolve("model.safetensors"));
        java.util.Random rnd = new java.util.Random(12);
        int position = 0;
        double maxDiff = 0;
        // Chunks crossing the capacity steps (64, 128) and ending at the model's last position (160).
        int[] chunks = {10, 1, 50, 1, 1, 5, 60, 1, 31};
        for (int n : chunks) {
            long[] ids = rnd.longs(n, 0, config.vocabSize()).toArray();
            float[] logits = feed("grow", position, ids).toFloats();
            double[] expected = reference.feed(ids);
            for (int i = 0; i < logits.length; i++) {
                maxDiff = Math.max(maxDiff, Math.abs(logits[i] - expected[i]));
            }
            position += n;
        }
        assertThat(position).isEqualTo(config.maxPositions());
        assertThat(exec.cachedLength("grow")).isEqualTo(config.maxPositions());
        assertThat(maxDiff).isLessThanOrEqualTo(1e-4);
        assertThatThrownBy(() -> feed("grow", config.maxPositions(), 1)).hasMessageContaining("beyond");
        exec.release("grow");
    }

    @Test
    void stepsLeaveNoNativeArraysBehindAndReleaseFreesTheCache() {
        int baseline = exec.liveArrays();
        StageResult r = feed("leak", 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10);
        int afterPrefill = exec.liveArrays();
        assertThat(afterPrefill).isGreaterThan(baseline);
        int position = 10;
        for (int i = 0; i < 40; i++) {
            r = feed("leak", position++, Pipeline.argMax(r.toFloats(), 0, config.vocabSize()));
        }
        // Steps within the first capacity step allocate temporaries only, and one array per full block the prefix
        // cache keeps (it outlives the sequence).
        int blocks = exec.prefixCacheStats().blocks();
        assertThat(blocks).isEqualTo(50 / PrefixCache.BLOCK_TOKENS);
        assertThat(exec.liveArrays()).isEqualTo(afterPrefill + blocks);
        exec.release("leak");
        assertThat(exec.liveArrays()).isEqualTo(baseline + blocks);
    }
}
