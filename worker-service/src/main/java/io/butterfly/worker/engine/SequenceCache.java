package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.model.KvCacheSizing;

/**
 * One sequence's keys and values for this stage's layers, in one array {@code [layers, 2, kvHeads, capacity,
 * headDim]} (keys at 0, values at 1 of the second axis). A step writes its new positions in place (the stage's
 * attention, see attention.py), so a decode step copies one position per layer instead of the whole cache (as a
 * concatenating cache would); attention reads the positions written so far, a view.
 *
 * <p>Capacity grows as {@link KvCacheSizing} says: by a quarter, in steps of its {@link KvCacheSizing#GROWTH}
 * positions, so growth copies stay geometric.
 */
final class SequenceCache implements AutoCloseable {

    private final NDManager manager;
    private final int layers;
    private final int kvHeads;
    private final int headDim;
    private final int maxPositions;
    private final long bytesPerPosition;
    private final long reservedBytes;
    /** {@code [layers, 2, kvHeads, capacity, headDim]}, null while the capacity is 0. */
    private NDArray keysAndValues;
    private int capacity;
    private int length;

    /** @param reservePositions positions the sequence may reach (0 = unknown), see {@link #accountedBytes()} */
    SequenceCache(NDManager parent, int layers, int kvHeads, int headDim, int maxPositions, int reservePositions) {
        this.manager = parent.newSubManager();
        this.layers = layers;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.maxPositions = maxPositions;
        this.bytesPerPosition = KvCacheSizing.bytesPerPosition(layers, kvHeads, headDim);
        this.reservedBytes = layers == 0 ? 0 : KvCacheSizing.reservedCapacity(reservePositions, maxPositions) * bytesPerPosition;
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
        return layers == 0 ? 0 : KvCacheSizing.capacityFor(capacity, positions, maxPositions) * bytesPerPosition;
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
        if (positions <= capacity || layers == 0) {
            return;
        }
        int newCapacity = KvCacheSizing.capacityFor(capacity, positions, maxPositions);
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

    void advance(int tokens) {
        length += tokens;
    }

    @Override
    public void close() {
        manager.close();
    }
}
