package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import java.util.Arrays;
import java.util.List;

/**
 * One forward step over a packed batch: where each sequence's rows sit, their absolute positions, and
 * per-step constants (causal masks) shared by all layers. Arrays it creates belong to the step's scope.
 *
 * <p>Batch invariance is decided here, and only here. The row-wise work of a step (projections, norms,
 * activations, the LM head) runs on one packed array, and the GEMM kernels round a row differently by how many
 * rows share the call. A batch-invariant step therefore runs on {@link #rows()}: its tokens, then zero rows up
 * to a multiple of {@link #ROW_QUANTUM}, dropped again at the end; the LM head's rows are padded the same way.
 * Attention runs per sequence, on shapes that depend on that sequence alone.
 */
final class StepBatch {

    /**
     * Rows of a product that round alike whatever else shares the call, measured with DJL 0.35.1 / libtorch 2.7.1
     * (MKL) on CPU: a row computed among 4, 8, ... 1024 rows (at any offset) gives the same bits with 1, 2, 3, 4
     * or 8 intra-op threads, while among 1 to 3 rows (and, threaded, the last rows of a count that is not a
     * multiple of 4) it takes another kernel and rounds differently.
     */
    static final int ROW_QUANTUM = 4;

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
    private final boolean batchInvariant;
    private final int rows;
    private final NDArray[] masks;

    StepBatch(NDManager manager, List<Slice> slices, int totalTokens, boolean batchInvariant) {
        this.manager = manager;
        this.slices = slices;
        this.totalTokens = totalTokens;
        this.batchInvariant = batchInvariant;
        this.rows = padded(totalTokens);
        this.masks = new NDArray[slices.size()];
    }

    private int padded(int count) {
        return batchInvariant ? (count + ROW_QUANTUM - 1) / ROW_QUANTUM * ROW_QUANTUM : count;
    }

    NDManager manager() {
        return manager;
    }

    List<Slice> slices() {
        return slices;
    }

    /** Rows of the packed arrays the layers run on: the tokens, then any padding. */
    int rows() {
        return rows;
    }

    /** The step's token ids, padded to {@link #rows()} with id 0. */
    long[] tokenIds(long[] ids) {
        return ids.length == rows ? ids : Arrays.copyOf(ids, rows);
    }

    /** Absolute position of every packed row (0 for padding). */
    long[] positions() {
        long[] pos = new long[rows];
        for (Slice s : slices) {
            for (int t = 0; t < s.numTokens(); t++) {
                pos[s.rowOffset() + t] = s.position() + t;
            }
        }
        return pos;
    }

    /** Each sequence's rows of a packed array, in batch order (views; the array itself for a lone unpadded sequence). */
    NDList split(NDArray packed) {
        if (slices.size() == 1 && rows == totalTokens) {
            return new NDList(packed);
        }
        long[] cuts = new long[slices.size() - 1 + (rows > totalTokens ? 1 : 0)];
        for (int i = 1; i < slices.size(); i++) {
            cuts[i - 1] = slices.get(i).rowOffset();
        }
        if (rows > totalTokens) {
            cuts[cuts.length - 1] = totalTokens;
        }
        return packed.split(cuts, 0);
    }

    /**
     * Packs blocks of rows (the step's tokens, in batch order) into {@code [rows(), ...]}, appending the
     * padding as zero rows.
     */
    NDArray pack(NDList tokenRows) {
        if (rows > totalTokens) {
            NDArray first = tokenRows.get(0);
            tokenRows.add(manager.zeros(new Shape(rows - totalTokens).addAll(first.getShape().slice(1)), first.getDataType()));
        }
        return tokenRows.size() == 1 ? tokenRows.get(0) : NDArrays.concat(tokenRows, 0);
    }

    /** The tokens' rows of a packed array (the padding dropped). */
    NDArray tokenRows(NDArray packed) {
        return rows == totalTokens ? packed : packed.get(new NDIndex().addSliceDim(0, totalTokens));
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
                Arrays.fill(m, t * capacity + s.position() + t + 1, (t + 1) * capacity, Float.NEGATIVE_INFINITY);
            }
            masks[i] = manager.create(m, new Shape(n, capacity));
        }
        return masks[i];
    }

    /**
     * Each sequence's last row, {@code [numSequences, hidden]}, padded like the step's rows (with copies of the last
     * sequence's row) for the head; {@link #sequenceRows} drops the padding from the head's output.
     */
    NDArray lastRows(NDArray packed) {
        if (slices.size() == 1 && rows == 1) {
            return packed;
        }
        long[] last = new long[padded(slices.size())];
        for (int i = 0; i < last.length; i++) {
            Slice s = slices.get(Math.min(i, slices.size() - 1));
            last[i] = s.rowOffset() + s.numTokens() - 1;
        }
        return packed.get(manager.create(last));
    }

    /** The sequences' rows of what the head computed from {@link #lastRows}. */
    NDArray sequenceRows(NDArray head) {
        return head.getShape().get(0) == slices.size() ? head : head.get(new NDIndex().addSliceDim(0, slices.size()));
    }
}
