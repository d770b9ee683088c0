package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import java.util.Arrays;
import java.util.List;

/**
 * One forward step over a packed batch: where each sequence's rows sit, their absolute positions and their caches,
 * as a stage's TorchScript takes them. Arrays it creates belong to the step's scope.
 *
 * <p>Batch invariance is decided here, and only here. The row-wise work of a step (projections, norms,
 * activations, the LM head) runs on one packed array, and some GEMM kernels round a row differently by how many
 * rows share the call. A batch-invariant step therefore runs on {@link #rows()}: its tokens, then zero rows up
 * to a multiple of the projections' row quantum ({@link TorchScript.Linear#rowQuantum()}; 1, no padding, for
 * oneDNN's), dropped again at the end; the LM head's rows are padded the same way. Attention runs per sequence, on
 * shapes that depend on that sequence alone.
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
    private final int rowQuantum;
    private final int rows;
    private final int logitRows;

    /** @param rowQuantum rows are padded to a multiple of this (1: no padding) */
    StepBatch(NDManager manager, List<Slice> slices, int totalTokens, int rowQuantum) {
        this.manager = manager;
        this.slices = slices;
        this.totalTokens = totalTokens;
        this.rowQuantum = rowQuantum;
        this.rows = padded(totalTokens);
        this.logitRows = (int) slices.stream().filter(s -> !s.chunk().skipLogits()).count();
    }

    private int padded(int count) {
        return (count + rowQuantum - 1) / rowQuantum * rowQuantum;
    }

    /** The step's tokens (its rows without padding). */
    int totalTokens() {
        return totalTokens;
    }

    NDManager manager() {
        return manager;
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

    /** Per sequence: its row offset, its new tokens and the position of the first ({@code sequences} in attention.py). */
    long[] sequences() {
        long[] triples = new long[3 * slices.size()];
        for (int i = 0; i < slices.size(); i++) {
            Slice s = slices.get(i);
            triples[3 * i] = s.rowOffset();
            triples[3 * i + 1] = s.numTokens();
            triples[3 * i + 2] = s.position();
        }
        return triples;
    }

    /** Per sequence, its cache ({@code caches} in attention.py). */
    NDArray[] caches() {
        return slices.stream().map(s -> s.cache().keysAndValues()).toArray(NDArray[]::new);
    }

    /** Hidden states of the step's tokens {@code [tokens, hidden]}, with the padding rows appended as zeros. */
    NDArray padded(NDArray tokenRows) {
        if (rows == totalTokens) {
            return tokenRows;
        }
        Shape shape = new Shape(rows - totalTokens).addAll(tokenRows.getShape().slice(1));
        return tokenRows.concat(manager.zeros(shape, tokenRows.getDataType()), 0);
    }

    /** The tokens' rows of a packed array (the padding dropped). */
    NDArray tokenRows(NDArray packed) {
        return rows == totalTokens ? packed : packed.get(new NDIndex().addSliceDim(0, totalTokens));
    }

    /** The sequences whose logits are wanted (those that do not {@link SequenceChunk#skipLogits skip} them). */
    int logitRows() {
        return logitRows;
    }

    /**
     * The row of the last token of each sequence whose logits are wanted, padded like the step's rows (repeating the
     * last one) for the head; {@link #sequenceRows} drops the padding from the head's output. Needs
     * {@link #logitRows()} &gt; 0.
     */
    NDArray lastRows() {
        long[] wanted = slices.stream().filter(s -> !s.chunk().skipLogits())
                .mapToLong(s -> s.rowOffset() + s.numTokens() - 1).toArray();
        long[] last = Arrays.copyOf(wanted, padded(wanted.length));
        Arrays.fill(last, wanted.length, last.length, wanted[wanted.length - 1]);
        return manager.create(last);
    }

    /** The wanted sequences' rows of what the head computed from {@link #lastRows}. */
    NDArray sequenceRows(NDArray head) {
        return head.getShape().get(0) == logitRows ? head : head.get(new NDIndex().addSliceDim(0, logitRows));
    }
}
