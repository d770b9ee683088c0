package io.butterfly.worker.pipeline;

import io.butterfly.common.error.ButterflyException;
import io.butterfly.common.sampling.GreedyChoice;
import io.butterfly.worker.engine.StageResult;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * The end of one step, for the coordinator waiting for it: the last stage's logits, or why the step failed on
 * the stage where it did. Exactly one of {@code logits} and {@code failure} is set.
 *
 * @param logits  at the last position of each sampling sequence that does not decode greedily, {@code [rows, vocab]}
 * @param greedy  for each greedy sampling sequence, in batch order, the summary of its row ({@link GreedyChoice})
 * @param timings of the stages before this one, in pipeline order
 * @param here    this stage's, stopped when the outcome is sent
 * @param hashes  what every stage the step passed computed, this one's last (empty with a failure)
 */
public record StepOutcome(String taskId, int step, StageResult logits, List<GreedyChoice> greedy, Failure failure,
                          List<StageTiming> timings, StageClock here, List<StageHashes> hashes) {

    /** Why the step failed on stage {@code nodeId}, with the code and kind that stage would answer a call with. */
    public record Failure(String nodeId, ButterflyException error) {
    }

    /**
     * The last stage's outcome: the logits rows of the sequences that sample ({@code rows}, in batch order), each
     * greedy sequence's summarized ({@link GreedyChoice}) and the others' sent whole. A row that cannot be summarized
     * (NaN or infinite logits) sends them all whole, for the coordinator to refuse as it would.
     */
    static StepOutcome logits(Step step, StageResult rows, StageClock here) {
        return logits(step, rows, here, null);
    }

    /** As {@link #logits(Step, StageResult, StageClock)}, with what this stage computed ({@code mine}) added. */
    static StepOutcome logits(Step step, StageResult rows, StageClock here, StageHashes mine) {
        List<StageHashes> hashes = new ArrayList<>(step.hashes());
        if (mine != null) {
            hashes.add(mine);
        }
        List<Step.Slice> sampling = step.sequences().stream().filter(s -> !s.skipLogits()).toList();
        if (sampling.stream().noneMatch(Step.Slice::greedy) || rows.shape()[0] != sampling.size()) {
            return new StepOutcome(step.taskId(), step.step(), rows, List.of(), null, step.timings(), here, hashes);
        }
        int vocab = (int) rows.shape()[1];
        float[] values = rows.toFloats();
        List<GreedyChoice> greedy = new ArrayList<>();
        int kept = 0;
        float[] whole = new float[values.length];
        try {
            for (int r = 0; r < sampling.size(); r++) {
                Step.Slice s = sampling.get(r);
                if (s.greedy()) {
                    greedy.add(GreedyChoice.of(values, r * vocab, vocab, Math.max(0, s.greedyAlternatives())));
                } else {
                    System.arraycopy(values, r * vocab, whole, kept++ * vocab, vocab);
                }
            }
        } catch (IllegalArgumentException unusable) {
            return new StepOutcome(step.taskId(), step.step(), rows, List.of(), null, step.timings(), here, hashes);
        }
        ByteBuffer bytes = ByteBuffer.allocate(kept * vocab * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        bytes.asFloatBuffer().put(whole, 0, kept * vocab);
        return new StepOutcome(step.taskId(), step.step(), new StageResult(bytes, new long[]{kept, vocab}, true),
                greedy, null, step.timings(), here, hashes);
    }

    static StepOutcome failed(Step step, Failure failure, StageClock here) {
        return new StepOutcome(step.taskId(), step.step(), null, List.of(), failure, step.timings(), here, List.of());
    }
}
