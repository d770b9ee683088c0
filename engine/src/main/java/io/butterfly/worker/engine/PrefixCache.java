package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The KV of prompts' full blocks kept for later sequences that start alike (automatic prefix caching, as vLLM's):
 * blocks of {@link #BLOCK_TOKENS} positions, each keyed by the {@link PrefixHashes hash chain} of the inputs up to its
 * end, least recently used first. A new sequence whose first blocks are here has their keys, values and sent rows
 * copied into its own cache (the blocks themselves are never written: a sequence that diverges writes its own
 * cache) and computes only the rest of its prompt.
 *
 * <p>Blocks are counted against the executor's KV budget with the sequences' caches; a step that needs their room
 * evicts them, oldest use first. With no budget, at most {@link #UNBUDGETED_BLOCKS} are kept. Their input keys and sent
 * rows live on the Java heap (their keys and values in native memory), and the KV budget (2 GB by default) does not
 * know the heap (a worker's {@code -Xmx1g}): on a stage of a narrow model the rows are a third of a block, so a
 * budget's worth of blocks would want more heap than there is. So the blocks' heap bytes are bounded too, by {@code
 * heapAllowance}, evicting the oldest (the executor gives a quarter of the heap, {@link #heapAllowance()}). Seen in the
 * soak of issue 47: a worker that held its stage for 19 minutes of distinct long prompts had 325 MiB of heap after a
 * full GC, nearly all blocks' rows, and would have gone on to ~700 MiB. Not thread-safe: the executor calls it under
 * its lock; the counters are read by metrics without it.
 */
final class PrefixCache implements AutoCloseable {

    /** Positions per block (as vLLM's default). */
    static final int BLOCK_TOKENS = 16;
    /** The most blocks kept when the executor has no KV budget. */
    static final int UNBUDGETED_BLOCKS = 4096;

    /**
     * One block: its keys and values {@code [layers, 2, kvHeads, BLOCK_TOKENS, headDim]} (null on a stage without
     * layers), its input keys, and the rows sent on for its positions (empty on the last stage).
     */
    record Block(NDArray keysAndValues, long[] inputKeys, byte[] sentRows) {
    }

    private final long bytesPerBlock;
    /** The most heap the blocks' input keys and sent rows may take together. */
    private final long heapAllowance;
    private long heapBytes;
    /** Access order: the eldest is the least recently used. */
    private final LinkedHashMap<Long, Block> blocks = new LinkedHashMap<>(64, 0.75f, true);
    private volatile int size;
    private volatile long queriedTokens;
    private volatile long hitTokens;
    private volatile long evictions;

    /** Blocks bounded by the KV budget only. */
    PrefixCache(long bytesPerBlock) {
        this(bytesPerBlock, Long.MAX_VALUE);
    }

    /** @param heapAllowance the most heap the blocks' input keys and sent rows may take together */
    PrefixCache(long bytesPerBlock, long heapAllowance) {
        if (heapAllowance < 0) {
            throw new IllegalArgumentException("heapAllowance must be >= 0, got " + heapAllowance);
        }
        this.bytesPerBlock = bytesPerBlock;
        this.heapAllowance = heapAllowance;
    }

    /** What a stage's prefix cache may keep on the heap: a quarter of the most the heap may grow to. */
    static long heapAllowance() {
        return Runtime.getRuntime().maxMemory() / 4;
    }

    /**
     * The blocks held for the first of {@code hashes}, in order, up to the first one missing and at most
     * {@code usable}; counts the lookup ({@code hashes.length} blocks queried). The blocks found become the most
     * recently used, the first last, so that a chain is evicted from its end.
     */
    List<Block> lookup(long[] hashes, int usable) {
        List<Block> found = new ArrayList<>();
        for (int b = 0; b < Math.min(usable, hashes.length); b++) {
            Block block = blocks.get(hashes[b]);
            if (block == null) {
                break;
            }
            found.add(block);
        }
        for (int b = found.size() - 1; b >= 0; b--) {
            blocks.get(hashes[b]); // touch, the first last
        }
        queriedTokens += (long) hashes.length * BLOCK_TOKENS;
        hitTokens += (long) found.size() * BLOCK_TOKENS;
        return found;
    }

    boolean contains(long hash) {
        return blocks.containsKey(hash);
    }

    /**
     * Keeps a block (which this cache now owns) under its chain hash, then evicts the least recently used blocks while
     * the blocks' heap bytes are over the allowance (the new block last: one that alone is over it is not kept).
     */
    void put(long hash, Block block) {
        Block old = blocks.put(hash, block);
        heapBytes += heapBytes(block);
        if (old != null) {
            heapBytes -= heapBytes(old);
            close(old);
        }
        size = blocks.size();
        while (heapBytes > heapAllowance && evictOldest()) {
            // the oldest first
        }
    }

    /** Evicts the least recently used block; false if there was none. */
    boolean evictOldest() {
        Iterator<Map.Entry<Long, Block>> eldest = blocks.entrySet().iterator();
        if (!eldest.hasNext()) {
            return false;
        }
        Block block = eldest.next().getValue();
        heapBytes -= heapBytes(block);
        close(block);
        eldest.remove();
        size = blocks.size();
        evictions++;
        return true;
    }

    /** Whether one more block may be kept with no KV budget to bound them. */
    boolean roomUnbudgeted() {
        return blocks.size() < UNBUDGETED_BLOCKS;
    }

    long bytesPerBlock() {
        return bytesPerBlock;
    }

    /** Heap the blocks' input keys and sent rows take (their arrays' contents). */
    long heapBytes() {
        return heapBytes;
    }

    private static long heapBytes(Block block) {
        return (long) block.inputKeys().length * Long.BYTES + block.sentRows().length;
    }

    /** Memory the blocks take, counted against the KV budget. */
    long bytes() {
        return size * bytesPerBlock;
    }

    int blocks() {
        return size;
    }

    /** Prompt tokens in full blocks looked up since the start. */
    long queriedTokens() {
        return queriedTokens;
    }

    /** Of those, tokens found here (not computed). */
    long hitTokens() {
        return hitTokens;
    }

    long evictions() {
        return evictions;
    }

    private static void close(Block block) {
        if (block.keysAndValues() != null) {
            block.keysAndValues().close();
        }
    }

    @Override
    public void close() {
        blocks.values().forEach(PrefixCache::close);
        blocks.clear();
        size = 0;
        heapBytes = 0;
    }
}
