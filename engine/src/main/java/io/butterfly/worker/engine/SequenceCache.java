package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.model.KvCacheSizing;
import io.butterfly.common.model.ModelConfig;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;

/**
 * One sequence's keys and values for this stage's layers, in one array {@code [layers, 2, kvHeads, capacity,
 * headDim]} (keys at 0, values at 1 of the second axis). A step writes its new positions in place (the stage's
 * attention, see attention.py), so a decode step copies one position per layer instead of the whole cache (as a
 * concatenating cache would); attention reads the positions written so far, a view.
 *
 * <p>Capacity grows as {@link KvCacheSizing} says: by a quarter, in steps of its {@link KvCacheSizing#GROWTH}
 * positions, so growth copies stay geometric. Beside it, {@link SentRows} records each position's input and what was sent
 * on for it, so that a replayed step is answered without computing ({@link #answers}); a step that feeds other
 * inputs from an earlier position {@link #rewind rewinds} the cache to it. The budget counts both.
 */
final class SequenceCache implements AutoCloseable {

    private final NDManager manager;
    private final int layers;
    private final int kvHeads;
    private final int headDim;
    private final int maxPositions;
    private final long bytesPerPosition;
    private final long reservedBytes;
    private final SentRows sent;
    /** {@code [layers, 2, kvHeads, capacity, headDim]}, null while the capacity is 0. */
    private NDArray keysAndValues;
    private int capacity;
    private int length;
    /** The {@link PrefixHashes} chain of this cache's first {@link #hashedBlocks} full blocks. */
    private long[] blockHashes = new long[0];
    private int hashedBlocks;
    /** Full blocks already offered to the prefix cache. */
    private int offeredBlocks;

    /**
     * @param lastStage        whether the stage holds the head (it sends logits, and keeps no sent rows)
     * @param reservePositions positions the sequence may reach (0 = unknown), see {@link #accountedBytes()}
     */
    SequenceCache(NDManager parent, ModelConfig config, int layers, boolean lastStage, int reservePositions) {
        this.manager = parent.newSubManager();
        this.layers = layers;
        this.kvHeads = config.numKvHeads();
        this.headDim = config.headDim();
        this.maxPositions = config.maxPositions();
        this.bytesPerPosition = KvCacheSizing.stageBytesPerPosition(config, layers, lastStage);
        this.reservedBytes = KvCacheSizing.reservedBytes(config, layers, lastStage, reservePositions);
        this.sent = new SentRows(lastStage ? 0 : config.hiddenSize() * Float.BYTES);
    }

    /** What the budget counts for this cache: its reservation, or what it takes if that is more. */
    long accountedBytes() {
        return Math.max(bytes(), reservedBytes);
    }

    /** Memory the arrays take now. */
    long bytes() {
        return capacity * bytesPerPosition;
    }

    /** Memory the arrays would take once {@link #ensureCapacity} made room for {@code positions}. */
    long bytesFor(int positions) {
        return KvCacheSizing.capacityFor(capacity, positions, maxPositions) * bytesPerPosition;
    }

    int length() {
        return length;
    }

    int capacity() {
        return capacity;
    }

    /**
     * Makes room for {@code positions} cached positions; the new array outlives the caller's scope. A failure (out of
     * memory) leaves the cache as it was.
     */
    @SuppressWarnings("try") // the scope only frees temporaries on close
    void ensureCapacity(int positions) {
        if (positions <= capacity) {
            return;
        }
        int newCapacity = KvCacheSizing.capacityFor(capacity, positions, maxPositions);
        sent.grow(newCapacity);
        if (layers == 0) {
            capacity = newCapacity;
            return;
        }
        NDArray grown = manager.zeros(new Shape(layers, 2, kvHeads, newCapacity, headDim));
        NDScope.unregister(grown);
        if (keysAndValues != null && length > 0) {
            NDIndex filled = new NDIndex().addAllDim(3).addSliceDim(0, length);
            try (NDScope ignored = new NDScope()) {
                grown.set(filled, keysAndValues.get(filled));
            } catch (RuntimeException | Error e) {
                grown.close();
                throw e;
            }
        }
        if (keysAndValues != null) {
            keysAndValues.close();
        }
        keysAndValues = grown;
        capacity = newCapacity;
    }

    /** The keys and values, {@code [layers, 2, kvHeads, capacity, headDim]}; null before the first {@link #ensureCapacity}. */
    NDArray keysAndValues() {
        return keysAndValues;
    }

    /**
     * Whether this stage computed {@code chunk}'s positions before from the inputs keyed {@code inputKeys[from, from +
     * n)}, so that what it sent for them answers the step (on the last stage only a step that wants no logits).
     */
    boolean answers(SequenceChunk chunk, long[] inputKeys, int from, boolean lastStage) {
        return chunk.position() + chunk.numTokens() <= length && (!lastStage || chunk.skipLogits())
                && sent.fedAlike(chunk.position(), inputKeys, from, chunk.numTokens());
    }

    /** Writes the rows sent for positions {@code [position, position + n)} into {@code into}. */
    void copySent(int position, int n, ByteBuffer into) {
        sent.copySent(position, n, into);
    }

    /** Forgets the positions from {@code position} on: a step feeds them anew (attention writes over them). */
    void rewind(int position) {
        length = Math.min(length, position);
        hashedBlocks = Math.min(hashedBlocks, length / PrefixCache.BLOCK_TOKENS);
        offeredBlocks = Math.min(offeredBlocks, hashedBlocks);
    }

    int offeredBlocks() {
        return offeredBlocks;
    }

    void offeredBlocks(int blocks) {
        offeredBlocks = blocks;
    }

    /** The chain hashes of the full blocks cached, extended over the blocks filled since the last call. */
    long[] blockHashes() {
        int full = length / PrefixCache.BLOCK_TOKENS;
        if (full > hashedBlocks) {
            int b = PrefixCache.BLOCK_TOKENS;
            long[] more = PrefixHashes.chain(hashedBlocks == 0 ? 0 : blockHashes[hashedBlocks - 1],
                    sent.keys(hashedBlocks * b, (full - hashedBlocks) * b), 0, (full - hashedBlocks) * b, b);
            blockHashes = Arrays.copyOf(blockHashes, Math.max(full, blockHashes.length));
            System.arraycopy(more, 0, blockHashes, hashedBlocks, more.length);
            hashedBlocks = full;
        }
        return Arrays.copyOf(blockHashes, hashedBlocks);
    }

    /** A copy of full block {@code block} of this cache, its arrays in {@code into} (outliving the caller's scope). */
    @SuppressWarnings("try") // the scope only frees temporaries on close
    PrefixCache.Block copyBlock(int block, NDManager into) {
        int b = PrefixCache.BLOCK_TOKENS;
        int from = block * b;
        NDArray kv = null;
        if (layers > 0) {
            kv = into.zeros(new Shape(layers, 2, kvHeads, b, headDim));
            NDScope.unregister(kv);
            try (NDScope ignored = new NDScope()) {
                kv.set(new NDIndex().addAllDim(3), keysAndValues.get(new NDIndex().addAllDim(3).addSliceDim(from, from + b)));
            } catch (RuntimeException | Error e) {
                kv.close();
                throw e;
            }
        }
        return new PrefixCache.Block(kv, sent.keys(from, b), sent.rows(from, b));
    }

    /**
     * Fills this cache's positions from {@code position} (a block boundary) with {@code blocks} (found under the chain
     * {@code hashes}, in order): their keys, values, input keys and sent rows, as if computed here. Needs the capacity
     * for them.
     */
    @SuppressWarnings("try") // the scope only frees temporaries on close
    void restore(int position, List<PrefixCache.Block> blocks, long[] hashes) {
        int b = PrefixCache.BLOCK_TOKENS;
        rewind(position);
        blockHashes(); // the chain up to position, which the blocks continue
        if (position != length || position != hashedBlocks * b) {
            throw new IllegalStateException("blocks restored at position " + position + " of a cache of " + length);
        }
        for (int i = 0; i < blocks.size(); i++) {
            PrefixCache.Block block = blocks.get(i);
            int at = position + i * b;
            if (block.keysAndValues() != null) {
                try (NDScope ignored = new NDScope()) {
                    keysAndValues.set(new NDIndex().addAllDim(3).addSliceDim(at, at + b), block.keysAndValues());
                }
            }
            sent.record(at, block.inputKeys(), 0, b, ByteBuffer.wrap(block.sentRows()));
        }
        length = position + blocks.size() * b;
        blockHashes = Arrays.copyOf(blockHashes, Math.max(blockHashes.length, hashedBlocks + blocks.size()));
        System.arraycopy(hashes, 0, blockHashes, hashedBlocks, blocks.size());
        hashedBlocks += blocks.size();
        offeredBlocks = hashedBlocks; // they are in the prefix cache already
    }

    /**
     * Appends {@code n} computed positions: their input keys {@code inputKeys[from, from + n)} and the rows sent for
     * them, read from {@code sentRows} at its position (null on the last stage).
     */
    void append(long[] inputKeys, int from, int n, ByteBuffer sentRows) {
        sent.record(length, inputKeys, from, n, sentRows);
        length += n;
    }

    @Override
    public void close() {
        manager.close();
    }
}
