package io.butterfly.worker.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;

/** The block hash chain and the prefix cache's least-recently-used eviction, over seeded random inputs. */
class PrefixCacheTest {

    private static final int B = PrefixCache.BLOCK_TOKENS;

    @Test
    void aBlocksHashCoversEveryInputBeforeItsEndAndNoneAfter() {
        Random random = new Random(51);
        for (int round = 0; round < 200; round++) {
            int n = random.nextInt(8 * B);
            long[] keys = random.longs(n, 0, 50).toArray();
            long[] hashes = PrefixHashes.chain(0, keys, 0, n, B);
            assertThat(hashes).hasSize(n / B);
            if (n == 0) {
                continue;
            }
            // Changing one input changes the hash of its block and of every block after it, and no other.
            int at = random.nextInt(n);
            long[] changed = keys.clone();
            changed[at] = keys[at] + 1 + random.nextInt(10);
            long[] other = PrefixHashes.chain(0, changed, 0, n, B);
            for (int b = 0; b < hashes.length; b++) {
                if (b < at / B) {
                    assertThat(other[b]).isEqualTo(hashes[b]);
                } else {
                    assertThat(other[b]).isNotEqualTo(hashes[b]);
                }
            }
            // A chain continued from a block boundary is the chain of the whole, read at an offset of a larger array.
            int split = random.nextInt(n / B + 1) * B;
            long[] head = PrefixHashes.chain(0, keys, 0, split, B);
            long[] padded = LongStream.concat(LongStream.of(7, 8, 9), Arrays.stream(keys)).toArray();
            long[] tail = PrefixHashes.chain(split == 0 ? 0 : head[head.length - 1], padded, 3 + split, n - split, B);
            long[] joined = LongStream.concat(Arrays.stream(head), Arrays.stream(tail)).toArray();
            assertThat(joined).isEqualTo(hashes);
        }
    }

    @Test
    void evictsTheLeastRecentlyUsedBlockAndAChainFromItsEnd() {
        Random random = new Random(7);
        PrefixCache cache = new PrefixCache(100);
        List<Long> model = new ArrayList<>(); // least recently used first
        long evicted = 0;
        for (int op = 0; op < 5_000; op++) {
            int kind = random.nextInt(3);
            if (kind == 0) {
                long hash = random.nextInt(40);
                cache.put(hash, block());
                model.remove(hash);
                model.add(hash);
            } else if (kind == 1) {
                long[] chain = random.longs(1 + random.nextInt(5), 0, 40).toArray();
                int usable = random.nextInt(chain.length + 1);
                List<PrefixCache.Block> found = cache.lookup(chain, usable);
                int expected = 0;
                while (expected < Math.min(usable, chain.length) && model.contains(chain[expected])) {
                    expected++;
                }
                assertThat(found).hasSize(expected);
                for (int b = expected - 1; b >= 0; b--) { // the first found becomes the most recent
                    model.remove(chain[b]);
                    model.add(chain[b]);
                }
            } else {
                boolean any = cache.evictOldest();
                assertThat(any).isEqualTo(!model.isEmpty());
                if (any) {
                    long oldest = model.remove(0);
                    assertThat(cache.contains(oldest)).isFalse();
                    evicted++;
                }
            }
            assertThat(cache.blocks()).isEqualTo(model.size());
            assertThat(cache.bytes()).isEqualTo(100L * model.size());
            model.forEach(h -> assertThat(cache.contains(h)).isTrue());
        }
        assertThat(cache.evictions()).isEqualTo(evicted);
        assertThat(cache.hitTokens()).isLessThanOrEqualTo(cache.queriedTokens());
    }

    /**
     * Issue 47's soak: a restarted worker held 325 MiB of heap after a full GC, nearly all prefix blocks' sent rows,
     * which only the KV budget (2 GB, native and heap together) bounded. The rows on the heap stay within their
     * allowance now, the least recently used blocks going first; the budget's own bound is unchanged.
     */
    @Test
    void thePrefixBlocksRowsOnTheHeapStayWithinTheirAllowance() {
        Random random = new Random(47);
        for (int round = 0; round < 50; round++) {
            int rowBytes = 64 * (1 + random.nextInt(16)); // per position: a narrow model's hidden row, or none
            long perBlock = (long) B * Long.BYTES + (long) B * rowBytes;
            long allowance = perBlock * (1 + random.nextInt(20)) + random.nextInt((int) perBlock);
            PrefixCache cache = new PrefixCache(10 * perBlock, allowance);
            List<Long> model = new ArrayList<>(); // least recently used first
            for (int op = 0; op < 400; op++) {
                long hash = random.nextInt(60);
                if (random.nextInt(4) == 0) {
                    List<PrefixCache.Block> found = cache.lookup(new long[] {hash}, 1);
                    assertThat(found).hasSize(model.contains(hash) ? 1 : 0);
                    if (!found.isEmpty()) {
                        model.remove(hash);
                        model.add(hash);
                    }
                    continue;
                }
                cache.put(hash, new PrefixCache.Block(null, new long[B], new byte[B * rowBytes]));
                model.remove(hash);
                model.add(hash);
                while (model.size() * perBlock > allowance) {
                    model.remove(0);
                }
                assertThat(cache.heapBytes()).isEqualTo(model.size() * perBlock).isLessThanOrEqualTo(allowance);
                assertThat(cache.blocks()).isEqualTo(model.size());
                for (long h : model) {
                    assertThat(cache.contains(h)).as("round %d op %d", round, op).isTrue();
                }
            }
            assertThat(cache.evictions()).as("the allowance was reached in round %d", round).isPositive();
        }
        PrefixCache tiny = new PrefixCache(1, 10);
        tiny.put(1, new PrefixCache.Block(null, new long[B], new byte[0]));
        assertThat(tiny.blocks()).as("a block alone over the allowance is not kept").isZero();
        assertThat(tiny.heapBytes()).isZero();
        assertThat(PrefixCache.heapAllowance()).isEqualTo(Runtime.getRuntime().maxMemory() / 4);
    }

    private static PrefixCache.Block block() {
        return new PrefixCache.Block(null, new long[B], new byte[0]);
    }
}
