package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.butterfly.common.model.KvCacheSizing;
import io.butterfly.common.model.ModelConfig;
import io.butterfly.common.text.ByteSize;
import io.butterfly.testsupport.ModelFixtures;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.LongStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The KV caches of all sequences stay within the executor's budget; a refused step changes nothing. */
class KvCacheBudgetTest {

    @TempDir
    static Path dir;

    private static ModelConfig config;
    private static DjlPartitionExecutor exec;
    /**
     * One cache capacity step (64 positions) of the whole model: 2 (k, v) x 4 layers x 2 kv heads x 16 x 4 bytes, and
     * the 8-byte key of each position's input (the last stage sends logits, so it keeps no sent rows, see SentRows).
     */
    private static final long STEP_BYTES = 64L * (2 * 4 * 2 * 16 * Float.BYTES + Long.BYTES);
    private static final long BUDGET = 2 * STEP_BYTES + STEP_BYTES / 4;

    @BeforeAll
    static void load() throws Exception {
        config = ModelFixtures.llamaGqa(); // 160 positions
        Path model = ModelFixtures.write(config, ModelFixtures.weightsOnly(), 1, dir.resolve("model"));
        // Room for two caches of one capacity step each, not three. The sequences' own budget: no prefix blocks kept
        // beside them (PrefixCacheTest counts those against the budget).
        exec = DjlPartitionExecutor.load(PartitionSpec.whole(config), List.of(model.resolve("model.safetensors")),
                new ExecutorOptions("cpu", 0, BUDGET).withPrefixCaching(false));
    }

    @AfterAll
    static void close() {
        exec.close();
    }

    @AfterEach
    void releaseAll() {
        for (String s : List.of("a", "b", "c", "long", "huge")) {
            if (exec.cachedLength(s) > 0) { // a release of a sequence never seen here would refuse it for good
                exec.release(s);
            }
        }
        assertThat(exec.cachedBytes()).isZero();
    }

    private static StageResult feed(String seq, int position, int tokens, int reserve) {
        long[] ids = LongStream.range(0, tokens).map(i -> (i * 31 + position) % config.vocabSize()).toArray();
        return exec.forward(List.of(new SequenceChunk(seq, position, tokens, reserve)), new StageInput.Tokens(ids));
    }

    @Test
    void aStepPastTheBudgetIsRefusedWithoutCachingAndSucceedsOnceAnotherSequenceIsReleased() {
        float[] alone = feed("c", 0, 10, 0).toFloats();
        exec.release("c");

        feed("a", 0, 64, 0);
        feed("b", 0, 10, 0);
        assertThat(exec.cachedBytes()).isEqualTo(2 * STEP_BYTES);

        // A third sequence would need a third step of capacity: refused, but it could fit alone (retry).
        assertThatThrownBy(() -> feed("c", 0, 10, 0)).isInstanceOfSatisfying(CacheBudgetExceededException.class,
                e -> assertThat(e.neverFits()).isFalse())
                .hasMessageContaining("layers [0, 4)").hasMessageContaining("2 sequences cached").hasMessageContaining("budget of " + ByteSize.human(BUDGET))
                .hasMessageContaining("holding " + ByteSize.human(2 * STEP_BYTES));
        assertThat(exec.cachedLength("c")).isZero();
        assertThat(exec.cachedSequences()).isEqualTo(2);

        // Without a reservation, so would a sequence growing past its capacity; it keeps what it had.
        assertThatThrownBy(() -> feed("a", 64, 1, 0)).isInstanceOf(CacheBudgetExceededException.class);
        assertThat(exec.cachedLength("a")).isEqualTo(64);
        // Steps within a sequence's capacity need no more memory.
        feed("b", 10, 1, 0);
        assertThat(exec.cachedBytes()).isEqualTo(2 * STEP_BYTES);

        exec.release("b");
        assertThat(exec.cachedBytes()).isEqualTo(STEP_BYTES);
        // The refused sequence now runs, from position 0, with the same result as before.
        assertThat(feed("c", 0, 10, 0).toFloats()).isEqualTo(alone);
    }

    @Test
    void aReservationIsCountedFromTheFirstStepSoAStartedSequenceIsNeverRefusedLater() {
        // 70 positions may grow the cache to 128 (a quarter past 70, in steps of 64): two steps are counted at once.
        feed("long", 0, 5, 70);
        assertThat(exec.cachedBytes()).isEqualTo(STEP_BYTES);
        // Another sequence's single step no longer fits beside that reservation.
        assertThatThrownBy(() -> feed("a", 0, 5, 10)).isInstanceOf(CacheBudgetExceededException.class);
        // The reserved sequence grows into its second step whatever else is cached.
        int position = 5;
        while (position < 70) {
            feed("long", position++, 1, 70);
        }
        assertThat(exec.cachedBytes()).isEqualTo(2 * STEP_BYTES);
        assertThat(exec.cachedLength("long")).isEqualTo(70);
    }

    @Test
    void aSequenceThatCouldNeverFitIsToldSo() {
        // 160 positions take 160 x 1 KB = 160 KB, more than the whole 144 KB budget.
        assertThatThrownBy(() -> feed("huge", 0, 5, 160)).isInstanceOfSatisfying(CacheBudgetExceededException.class,
                e -> assertThat(e.neverFits()).isTrue()).hasMessageContaining("fewer tokens");
        assertThat(exec.cachedSequences()).isZero();
    }

    @Test
    void reservedCapacityBoundsEveryGrowthWithinTheReservation() {
        // Property: growing step by step in any chunk sizes up to the reservation never passes the bound.
        java.util.Random rnd = new java.util.Random(7);
        for (int trial = 0; trial < 2000; trial++) {
            int max = 64 + rnd.nextInt(4096);
            int reserve = 1 + rnd.nextInt(max);
            int bound = KvCacheSizing.reservedCapacity(reserve, max);
            int capacity = 0;
            int reach = 0;
            while (reach < reserve) {
                reach = Math.min(reserve, reach + 1 + rnd.nextInt(Math.max(1, reserve / 3)));
                capacity = KvCacheSizing.capacityFor(capacity, reach, max);
                assertThat(capacity).isLessThanOrEqualTo(bound).isGreaterThanOrEqualTo(reach);
            }
        }
        assertThat(KvCacheSizing.reservedCapacity(0, 100)).isZero();
    }

    @Test
    void noBudgetMeansNoLimit() {
        assertThat(ExecutorOptions.cpu().kvCacheBytes()).isZero();
        assertThatThrownBy(() -> new ExecutorOptions("cpu", 0, -1)).isInstanceOf(IllegalArgumentException.class);
    }
}
