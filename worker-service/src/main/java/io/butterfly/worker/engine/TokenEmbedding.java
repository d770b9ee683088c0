package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.SparseFormat;

/**
 * Token embedding lookup. With a tied head on the same stage the table is the head's
 * {@code [hidden, vocab]} matrix and a lookup gathers columns: one copy of the largest matrix instead of
 * two, for a gather of a few columns per step.
 */
final class TokenEmbedding {

    private final NDArray table;
    private final boolean columns;

    private TokenEmbedding(NDArray table, boolean columns) {
        this.table = table;
        this.columns = columns;
    }

    /** @param vocabByHidden {@code [vocab, hidden]} as stored */
    static TokenEmbedding rowsOf(NDArray vocabByHidden) {
        return new TokenEmbedding(vocabByHidden, false);
    }

    /** @param hiddenByVocab {@code [hidden, vocab]}, the tied head's matrix */
    static TokenEmbedding columnsOf(NDArray hiddenByVocab) {
        return new TokenEmbedding(hiddenByVocab, true);
    }

    /** Token ids {@code [N]} to contiguous {@code [N, hidden]}. */
    NDArray lookup(NDArray tokenIds) {
        if (!columns) {
            // The engine's embedding op: a row gather, about twice as fast as advanced indexing.
            return tokenIds.getNDArrayInternal().embedding(tokenIds, table, SparseFormat.DENSE).singletonOrThrow();
        }
        // Contiguous rows as a row gather gives: reductions over a strided layout may round differently,
        // and a stage must compute the same bits whichever layout its input came in.
        NDArray transposed = table.get(new NDIndex(":, {}", tokenIds)).transpose();
        return transposed.reshape(-1).reshape(transposed.getShape());
    }
}
