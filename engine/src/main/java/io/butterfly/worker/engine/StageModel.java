package io.butterfly.worker.engine;

import ai.djl.ndarray.NDArray;

/** The weights and math of one partition for one architecture. */
interface StageModel extends AutoCloseable {

    /** Token ids {@code [N]} (int64) to hidden states {@code [N, hidden]}. */
    NDArray embed(NDArray tokenIds, StepBatch step);

    /** Runs this stage's transformer layers over packed hidden states {@code [N, hidden]}. */
    NDArray layers(NDArray hidden, StepBatch step);

    /**
     * The layers with each one's output shown to {@code probe} before the next reads it (null: as {@link #layers}).
     *
     * @throws UnsupportedOperationException if {@link #layerProbes()} is false
     */
    default NDArray layers(NDArray hidden, StepBatch step, LayerProbe probe) {
        if (probe == null) {
            return layers(hidden, step);
        }
        throw new UnsupportedOperationException("this stage computes its layers in one call and cannot show them one by one");
    }

    /** Whether {@link #layers(NDArray, StepBatch, LayerProbe)} takes a probe. */
    default boolean layerProbes() {
        return false;
    }

    /** Final norm and LM head over the given rows of {@code hidden}: logits {@code [rows, vocab]}. */
    NDArray head(NDArray hidden, NDArray rows);

    /** What its projections compute with, for logs and metrics (e.g. "oneDNN float32", "native Q4_0 (avx2)"). */
    String projections();

    /**
     * A batch-invariant step pads its rows to a multiple of this (1: its kernels give a row the same bits whatever
     * rows share the step, see {@link StepBatch}).
     */
    int rowQuantum();

    /**
     * The step is over: threads kept hot between its operations may sleep until the next one (where stages of a
     * pipeline share cores, a spinning idle stage slows the one computing).
     */
    default void rest() {
    }

    /** Memory the weights take as held. */
    long weightBytes();

    @Override
    void close();
}
