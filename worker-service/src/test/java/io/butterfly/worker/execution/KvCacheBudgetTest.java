package io.butterfly.worker.execution;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.ModelConfig;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The KV caches of all sequences stay within the executor's budget; a step past it changes nothing. */
class KvCacheBudgetTest {

    @TempDir
    static Path dir;

    private static ModelConfig config;
    private static DjlPartitionExecutor exec;
    /** One cache capacity step (64 positions) of the whole model: 2 (k, v) x 4 layers x 2 kv heads x 16 x 4 bytes. */
    private static final long STEP_BYTES = 64L * 2 * 4 * 2 * 16 * Float.BYTES;

    @BeforeAll
    static void load() throws Exception {
        config = TestModels.llamaGqa();
        Path model = TestModels.write(config, TestModels.Options.plain(), 1, dir.resolve("model"));
        // Room for two caches of one capacity step each, not three.
        exec = DjlPartitionExecutor.load(PartitionSpec.whole(config), List.of(model.resolve("model.safetensors")),
                new ExecutorOptions("cpu", 0, 2 * STEP_BYTES + STEP_BYTES / 2));
    }

    @AfterAll
    static void close() {
        exec.close();
    }

    private static StageResult feed(String seq, int position, int tokens) {
        long[] ids = LongStream.range(0, tokens).map(i -> (i * 31 + position) % config.vocabSize()).toArray();
        return exec.forward(List.of(new SequenceChunk(seq, position, tokens)), new StageInput.Tokens(ids));
    }

    @Test
    void aStepPastTheBudgetIsRefusedWithoutCachingAndSucceedsOnceAnotherSequenceIsReleased() {
        float[] alone = feed("c", 0, 10).toFloats();
        exec.release("c");

        feed("a", 0, 64);
        feed("b", 0, 10);
        assertThat(exec.cachedBytes()).isEqualTo(2 * STEP_BYTES);

        // A third sequence would need a third step of capacity.
        assertThatThrownBy(() -> feed("c", 0, 10)).isInstanceOf(CacheBudgetExceededException.class)
                .hasMessageContaining("layers [0, 4)").hasMessageContaining("2 sequences cached")
                .hasMessageContaining("budget");
        assertThat(exec.cachedLength("c")).isZero();
        assertThat(exec.cachedSequences()).isEqualTo(2);

        // So would a sequence growing past its capacity; it keeps what it had.
        assertThatThrownBy(() -> feed("a", 64, 1)).isInstanceOf(CacheBudgetExceededException.class);
        assertThat(exec.cachedLength("a")).isEqualTo(64);
        // Steps within a sequence's capacity need no more memory.
        feed("b", 10, 1);
        assertThat(exec.cachedBytes()).isEqualTo(2 * STEP_BYTES);

        exec.release("b");
        assertThat(exec.cachedBytes()).isEqualTo(STEP_BYTES);
        // The refused sequence now runs, from position 0, with the same result as before.
        assertThat(feed("c", 0, 10).toFloats()).isEqualTo(alone);
        exec.release("a");
        exec.release("c");
        assertThat(exec.cachedBytes()).isZero();
        assertThat(exec.cacheBudgetBytes()).isEqualTo(2 * STEP_BYTES + STEP_BYTES / 2);
    }

    @Test
    void noBudgetMeansNoLimit() {
        assertThat(ExecutorOptions.cpu().kvCacheBytes()).isZero();
        assertThatThrownBy(() -> new ExecutorOptions("cpu", 0, -1)).isInstanceOf(IllegalArgumentException.class);
    }
}
