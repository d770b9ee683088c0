package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import java.util.List;

/**
 * One forward step over a packed batch: where each sequence's rows sit, their absolute positions, and
 * per-step constants (causal masks) shared by all layers. Arrays it creates belong to the step's scope.
 */
final class StepBatch {

    /** A sequence's rows {@code [rowOffset, rowOffset + numTokens)} in the packed batch. */
    record Slice(SequenceChunk chunk, SequenceCache cache, int rowOffset) {

        int numTokens() {
            return chunk.numTokens();
        }

        int position() {
            return chunk.position();
        }
    }

    private final NDManager manager;
    private final List<Slice> slices;
    private final int totalTokens;
    private final NDArray[] masks;

    StepBatch(NDManager manager, List<Slice> slices, int totalTokens) {
        this.manager = manager;
        this.slices = slices;
        this.totalTokens = totalTokens;
        this.masks = new NDArray[slices.size()];
    }

    NDManager manager() {
        return manager;
    }

    List<Slice> slices() {
        return slices;
    }

    int totalTokens() {
        return totalTokens;
    }

    /** Absolute position of every packed row. */
    long[] positions() {
        long[] pos = new long[totalTokens];
        for (Slice s : slices) {
            for (int t = 0; t < s.numTokens(); t++) {
                pos[s.rowOffset() + t] = s.position() + t;
            }
        }
        return pos;
    }

    /** The rows of one sequence (a view; the whole array when the batch has one sequence). */
    NDArray rows(NDArray packed, Slice s) {
        if (slices.size() == 1) {
            return packed;
        }
        return packed.get(new NDIndex().addSliceDim(s.rowOffset(), s.rowOffset() + s.numTokens()));
    }

    /**
     * Additive mask {@code [n, capacity]} over slice {@code i}'s whole cache: new token t (absolute
     * position position + t) sees cached and new keys up to its own position; later positions, including
     * the unused capacity, get -inf.
     */
    NDArray causalMask(int i) {
        if (masks[i] == null) {
            Slice s = slices.get(i);
            int n = s.numTokens();
            int capacity = s.cache().capacity();
            float[] m = new float[n * capacity];
            for (int t = 0; t < n; t++) {
                java.util.Arrays.fill(m, t * capacity + s.position() + t + 1, (t + 1) * capacity, Float.NEGATIVE_INFINITY);
            }
            masks[i] = manager.create(m, new Shape(n, capacity));
        }
        return masks[i];
    }

    /** Each sequence's last row, {@code [numSequences, hidden]}. */
    NDArray lastRows(NDArray packed) {
        if (slices.size() == 1 && totalTokens == 1) {
            return packed;
        }
        long[] last = new long[slices.size()];
        for (int i = 0; i < last.length; i++) {
            Slice s = slices.get(i);
            last[i] = s.rowOffset() + s.numTokens() - 1;
        }
        return packed.get(manager.create(last));
    }
}
