package io.butterfly.coordinator.inference.engine;

import io.butterfly.common.sampling.GreedyChoice;
import java.util.List;

/** The last stage's answer to one step, as it arrived: nothing is decoded before it is asked for. */
public interface StepResult {

    /**
     * The logits at the last position of each sampling sequence, {@code [sequences, vocab]} row after row (float32),
     * decoded and checked against their hash; malformed ones are the stage's failure. With {@link #greedy()}
     * summaries, only the rows of the sampling sequences that did not ask for one.
     */
    float[] logits();

    /**
     * For each sampling sequence that asked for it ({@code StepInput.Slice#greedyAlternatives} >= 0), in batch order,
     * the summary of its logits row; empty when the last stage sent every row whole (a worker that predates them, or
     * a row that could not be summarized).
     */
    default List<GreedyChoice> greedy() {
        return List.of();
    }

    List<Long> logitsShape();

    /** What each stage spent on the step. */
    List<StageTiming> timings();

    /**
     * What each stage the step passed computed, in pipeline order (docs/verified-execution.md); empty from a pipeline
     * that reports none.
     */
    default List<StageHashes> hashes() {
        return List.of();
    }

    /**
     * @param contract     the precision contract it computed under, as text
     * @param outputHashes per sequence, in batch order: XXH64 of its output rows, or on the last stage of its logits
     *                     row (0: none)
     */
    record StageHashes(String nodeId, String contract, long[] outputHashes, List<LayerHashes> layers) {

        public StageHashes {
            layers = List.copyOf(layers);
        }

        public StageHashes(String nodeId, String contract, long[] outputHashes) {
            this(nodeId, contract, outputHashes, List.of());
        }
    }

    /** Per-layer snapshot hashes: the model's layer and per sequence, in batch order, its rows' hash. */
    record LayerHashes(int layer, long[] outputHashes) {
    }

    /** @param wallNanos the step's time in the stage, from receipt to hand-off; the rest of a step is transport */
    record StageTiming(String nodeId, long computeNanos, long wallNanos) {
    }
}
