package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.NDScope;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import io.butterfly.common.model.KvCacheSizing;

/**
 * One sequence's keys and values for this stage's layers. Keys are kept transposed,
 * {@code [kvHeads, headDim, capacity]}, values {@code [kvHeads, capacity, headDim]}. New positions are
 * written in place, so a decode step copies one position per layer instead of the whole cache (as a
 * concatenating cache would).
 *
 * <p>Attention multiplies by the whole, contiguous arrays and masks positions past the sequence (never
 * written, zero) with -inf: torch's batched matmul on a sliced view costs several times more per call
 * than the few masked columns. Capacity therefore grows as {@link KvCacheSizing} says: by a quarter, so at most a
 * quarter of the attention work is masked, and growth copies stay geometric.
 */
final class SequenceCache implements AutoCloseable {

    private final NDManager manager;
    private final NDArray[] keys;
    private final NDArray[] values;
    private final int kvHeads;
    private final int headDim;
    private final int maxPositions;
    private final long bytesPerPosition;
    private final long reservedBytes;
    private int capacity;
    private int length;

    /** @param reservePositions positions the sequence may reach (0 = unknown), see {@link #accountedBytes()} */
    SequenceCache(NDManager parent, int layers, int kvHeads, int headDim, int maxPositions, int reservePositions) {
        this.manager = parent.newSubManager();
        this.keys = new NDArray[layers];
        this.values = new NDArray[layers];
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
        return keys.length == 0 ? 0 : KvCacheSizing.capacityFor(capacity, positions, maxPositions) * bytesPerPosition;
    }

    int length() {
        return length;
    }

    int capacity() {
        return capacity;
    }

    /** Makes room for {@code positions} cached positions; the new arrays outlive the caller's scope. */
    void ensureCapacity(int positions) {
        if (positions <= capacity || keys.length == 0) {
            return;
        }
        int newCapacity = KvCacheSizing.capacityFor(capacity, positions, maxPositions);
        // All layers grow, or none does: a failure half-way (out of memory) leaves the cache as it was.
        NDArray[] newKeys = new NDArray[keys.length];
        NDArray[] newValues = new NDArray[values.length];
        try {
            for (int layer = 0; layer < keys.length; layer++) {
                newKeys[layer] = grown(keys[layer], new Shape(kvHeads, headDim, newCapacity), keyRange(0, length));
                newValues[layer] = grown(values[layer], new Shape(kvHeads, newCapacity, headDim), valueRange(0, length));
            }
        } catch (RuntimeException | Error e) {
            closeAll(newKeys);
            closeAll(newValues);
            throw e;
        }
        closeAll(keys);
        closeAll(values);
        System.arraycopy(newKeys, 0, keys, 0, keys.length);
        System.arraycopy(newValues, 0, values, 0, values.length);
        capacity = newCapacity;
    }

    /** A zeroed array of {@code shape} holding {@code old}'s filled part; {@code old} is left as it is. */
    @SuppressWarnings("try") // the scope only frees temporaries on close
    private NDArray grown(NDArray old, Shape shape, NDIndex filled) {
        NDArray fresh = manager.zeros(shape);
        NDScope.unregister(fresh);
        if (old != null && length > 0) {
            try (NDScope ignored = new NDScope()) {
                fresh.set(filled, old.get(filled));
            } catch (RuntimeException | Error e) {
                fresh.close();
                throw e;
            }
        }
        return fresh;
    }

    private static void closeAll(NDArray[] arrays) {
        for (NDArray a : arrays) {
            if (a != null) {
                a.close();
            }
        }
    }

    /**
     * Writes keys {@code [kvHeads, headDim, n]} (transposed) and values {@code [kvHeads, n, headDim]} at
     * positions {@code [position, position + n)}.
     */
    void write(int layer, int position, NDArray transposedKeys, NDArray newValues) {
        int n = (int) newValues.getShape().get(1);
        keys[layer].set(keyRange(position, position + n), transposedKeys);
        values[layer].set(valueRange(position, position + n), newValues);
    }

    /** A layer's keys, {@code [kvHeads, headDim, capacity]}. */
    NDArray transposedKeys(int layer) {
        return keys[layer];
    }

    /** A layer's values, {@code [kvHeads, capacity, headDim]}. */
    NDArray values(int layer) {
        return values[layer];
    }

    void advance(int tokens) {
        length += tokens;
    }

    private static NDIndex keyRange(int from, int to) {
        return new NDIndex().addAllDim(2).addSliceDim(from, to);
    }

    private static NDIndex valueRange(int from, int to) {
        return new NDIndex().addAllDim().addSliceDim(from, to);
    }

    @Override
    public void close() {
        manager.close();
    }
}
